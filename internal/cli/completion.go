package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
)

func completionCmd() *Command {
	return &Command{
		Name:    "completion",
		Summary: "print a shell completion script (bash, zsh or fish)",
		Usage:   "completion bash|zsh|fish",
		Help: `Load it in your shell's startup file:
  bash:  source <(nerve completion bash)
  zsh:   source <(nerve completion zsh)
  fish:  nerve completion fish | source`,
		Complete: "shell",
		Local:    true,
		Run:      runCompletion,
	}
}

var completionScripts = map[string]string{
	"bash": `# bash completion for nerve
# The words come from COMP_LINE, not COMP_WORDS: bash also breaks words at
# the characters of COMP_WORDBREAKS ('@', ':', '=' …), and nerve's words
# hold them (@fs, key=value).
_nerve() {
    local line="${COMP_LINE:0:COMP_POINT}" IFS=$' \t\n'
    local -a words
    read -ra words <<< "$line"
    [[ "$line" == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
    local cur="${words[${#words[@]}-1]}"
    IFS=$'\n'
    local -a cands=( $(nerve __complete -- "${words[@]:1}" 2>/dev/null) )
    # bash replaces only the part of the word after its last break.
    local pre="${cur%"${COMP_WORDS[COMP_CWORD]}"}"
    COMPREPLY=( "${cands[@]#"$pre"}" )
}
# '@' starts every node name; readline and COMP_WORDS disagree about where
# a word that holds it begins, so it stops breaking words (as npm's script
# does for '@' and '=').
COMP_WORDBREAKS=${COMP_WORDBREAKS//@/}
complete -o default -F _nerve nerve
`,
	"zsh": `#compdef nerve
# zsh completion for nerve
_nerve() {
    local -a cands
    cands=("${(@f)$(nerve __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    compadd -a cands
}
compdef _nerve nerve
`,
	"fish": `# fish completion for nerve
function __nerve_complete
    set -l tokens (commandline -opc) (commandline -ct)
    nerve __complete -- $tokens[2..-1] 2>/dev/null
end
complete -c nerve -f -a '(__nerve_complete)'
`,
}

func runCompletion(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve completion` needs a shell: bash, zsh or fish")
	}
	s, ok := completionScripts[inv.Args[0]]
	if !ok {
		return usagef(inv, "no completion for shell %q: use bash, zsh or fish", inv.Args[0])
	}
	_, err := fmt.Fprint(env.Stdout, s)
	return err
}

// runComplete prints the candidates for the last word of a command line
// (the words after "nerve"), one a line.
func runComplete(ctx context.Context, env *Env, inv *Invocation) error {
	words := inv.Args
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	for _, c := range Candidates(ctx, env, words, cur) {
		fmt.Fprintln(env.Stdout, c)
	}
	return nil
}

// Candidates returns what may complete cur after the words before it:
// subcommands, flags, and — asking a running daemon, never starting one —
// node ids, kinds and sessions.
func Candidates(ctx context.Context, env *Env, words []string, cur string) []string {
	root := Tree()
	cmd := root
	var args []string
	var pending *Flag // the flag whose value cur is
	for _, w := range words {
		switch {
		case pending != nil:
			pending = nil
		case strings.HasPrefix(w, "-"):
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			short := !strings.HasPrefix(w, "--")
			if f := findFlag(cmd.AllFlags(), name, short); f != nil && f.Value != "" && !hasValue {
				pending = f // the next word is the flag's value
			}
		default:
			if sub := cmd.Lookup(w); sub != nil && len(args) == 0 {
				cmd = sub
			} else {
				args = append(args, w)
			}
		}
	}
	nargs := len(args)
	var out []string
	add := func(c string) {
		if strings.HasPrefix(c, cur) {
			out = append(out, c)
		}
	}
	if pending != nil {
		for _, v := range pending.Values {
			add(v)
		}
		return out // nil for a free value: let the shell complete files
	}
	if strings.HasPrefix(cur, "-") {
		for _, f := range specialize(cmd, args).AllFlags() {
			add("--" + f.Name)
		}
		return out
	}
	if len(cmd.Sub) > 0 && nargs == 0 {
		for _, s := range cmd.Sub {
			if !s.Hidden {
				add(s.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	switch cmd.Complete {
	case "shell":
		for _, s := range []string{"bash", "fish", "zsh"} {
			add(s)
		}
	case "command":
		for _, s := range root.Sub {
			if !s.Hidden {
				add(s.Name)
			}
		}
	case "line":
		return lineCandidates(ctx, env, args, cur)
	case "node", "kind", "session":
		if cmd.Complete == "kind" && nargs > 0 {
			return nil
		}
		for _, c := range daemonWords(ctx, env, cmd.Complete) {
			add(c)
		}
	}
	slices.Sort(out)
	return out
}

// lineCandidates completes the last word of a Commander line given as
// words (`nerve call @fs re<Tab>`) as the Commander does: node ids, then
// the node's tools, then argument keys and values. It asks a running
// daemon for the nodes and the named node's tools.
func lineCandidates(ctx context.Context, env *Env, args []string, cur string) []string {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c := env.Client
	if c == nil {
		var err error
		if c, _, err = env.connectDaemon(ctx, false); err != nil {
			return nil
		}
		defer c.Close()
	}
	s := c.Session(env.SessionName())
	infos, err := s.Nodes(ctx)
	if err != nil {
		return nil
	}
	cat := make(map[string][]*mcp.Tool, len(infos))
	for _, i := range infos {
		cat[i.ID] = nil
	}
	if len(args) > 0 {
		if id := lineNode(args[0]); id != "" {
			if tools, err := mcpclient.Tools(ctx, s, id); err == nil {
				for _, t := range tools {
					cat[id] = append(cat[id], t)
				}
			}
		}
	}
	line := strings.Join(append(slices.Clone(args), cur), " ")
	cands, replace := commander.Complete(line, utf8.RuneCountInString(line), commander.NewIndex(cat), nil)
	keep := []rune(cur)
	if replace > len(keep) {
		return nil
	}
	keep = keep[:len(keep)-replace]
	out := make([]string, 0, len(cands))
	for _, cand := range cands {
		out = append(out, string(keep)+strings.TrimSuffix(cand, " "))
	}
	return out
}

// daemonWords asks a running daemon (briefly) for node ids, kinds or
// session names. Completion never starts a daemon.
func daemonWords(ctx context.Context, env *Env, what string) []string {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c := env.Client
	if c == nil {
		var err error
		if c, _, err = env.connectDaemon(ctx, false); err != nil {
			return nil
		}
		defer c.Close()
	}
	var words []string
	switch what {
	case "node", "line":
		infos, err := c.Session(env.SessionName()).Nodes(ctx)
		if err != nil {
			return nil
		}
		for _, i := range infos {
			if what == "line" {
				words = append(words, "@"+i.ID)
			} else {
				words = append(words, i.ID)
			}
		}
	case "kind":
		words, _ = c.Kinds(ctx)
	case "session":
		ss, err := c.Sessions(ctx)
		if err != nil {
			return nil
		}
		for _, s := range ss {
			words = append(words, s.Name)
		}
	}
	return words
}
