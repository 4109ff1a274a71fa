package graphlang

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// The programs a value may not reach (docs/graphs.md, "Values and the
// shell"): a value passed as a variable is safe from the shell that
// expands it, not from a second interpreter that reads its argument as
// code — `bash -c "echo ${inputs.x}"`, `sed "s/a/${inputs.x}/e"`, `python3
// -c …`, `ssh host …` — nor from a program that reads it as an option
// (`git log ${inputs.x}` with --output=FILE). Wrappers (env, sudo,
// timeout, …) are looked through to the program they run.

// The tables below are built on first use, not at every start of nerve
// (STYLE.md, practice 16): most runs of nerve check no graph.

// interpreters run their arguments (or a script an argument names) as
// code: a value in any of their arguments is refused.
var interpreters = sync.OnceValue(func() map[string]string {
	interpreters := map[string]string{}
	for _, f := range []struct{ why, names string }{
		{"a shell, which runs its arguments as a script (-c) or names its script with them", "sh bash zsh dash ksh mksh ash fish csh tcsh busybox"},
		{"a bash builtin that runs its argument as code", "eval source . trap alias compgen complete bind enable fc hash"},
		{"an interpreter, which runs its arguments as code (-c, -e) or names its script with them", "python python2 python3 perl ruby node nodejs deno bun php lua luajit tclsh wish expect Rscript R julia osascript pwsh powershell groovy jshell"},
		{"a program that runs a command built from its arguments or its input through a shell or another program", "xargs parallel watch script at batch su runuser sg tmux screen make m4 gdb vim vi nvim ex ed emacs"},
		{"a program that runs its arguments as commands elsewhere", "ssh rsh sqlite3 psql mysql"},
	} {
		for _, n := range strings.Fields(f.names) {
			interpreters[n] = f.why
		}
	}
	return interpreters
})

// versioned names interpreters by version: python3.12, perl5.36.
var versioned = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(python|perl|ruby|php|lua|node)[0-9][0-9.]*$`)
})

func interpreter(name string) (string, bool) {
	if why, ok := interpreters()[name]; ok {
		return why, true
	}
	if m := versioned().FindStringSubmatch(name); m != nil {
		return interpreters()[m[1]], true
	}
	return "", false
}

// optGrammar is what nerve knows of a program's options: enough to find
// where its command or script is.
type optGrammar struct {
	flags    string // short options without an argument
	args     string // short options with one (the rest of the word, or the next word)
	code     string // short options whose argument is code (sed -e, env -S)
	shell    string // short options that make it run its command through a shell (sudo -s)
	attached string // short options whose argument, optional, is only the rest of the word (sed -i)
	longFlag []string
	longArg  []string
	longCode []string
	operands int  // operands before the command (timeout's duration, chroot's folder)
	assigns  bool // NAME=value words before the command (env)
}

// wrappers run the program named in their arguments.
var wrappers = sync.OnceValue(func() map[string]optGrammar {
	return map[string]optGrammar{
		"env":     {flags: "i0v", args: "uCP", code: "S", longFlag: []string{"ignore-environment", "null", "debug"}, longArg: []string{"unset", "chdir"}, longCode: []string{"split-string"}, assigns: true},
		"exec":    {flags: "cl", args: "a"},
		"command": {flags: "pvV"},
		"builtin": {},
		"nohup":   {},
		"nice":    {args: "n", longArg: []string{"adjustment"}},
		"timeout": {flags: "fvp", args: "sk", longFlag: []string{"foreground", "preserve-status", "verbose"}, longArg: []string{"signal", "kill-after"}, operands: 1},
		"stdbuf":  {args: "ioe", longArg: []string{"input", "output", "error"}},
		"setsid":  {flags: "cfw", longFlag: []string{"ctty", "fork", "wait"}},
		"sudo": {flags: "AbEeHKklnPSVvBN", args: "CDghprRtTUu", shell: "si", longFlag: []string{"askpass", "background", "preserve-env", "edit", "set-home", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "validate", "bell", "no-update"},
			longArg: []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"}, longCode: []string{"shell", "login"}},
		"doas":    {flags: "n", args: "uC", shell: "s"},
		"chroot":  {longFlag: []string{"skip-chdir"}, longArg: []string{"userspec", "groups"}, operands: 1},
		"ionice":  {flags: "t", args: "cnp", longFlag: []string{"ignore"}, longArg: []string{"class", "classdata", "pid"}},
		"taskset": {flags: "acp", longFlag: []string{"all-tasks", "cpu-list", "pid"}, operands: 1},
		"time":    {flags: "apqv", args: "fo", longFlag: []string{"append", "portability", "quiet", "verbose"}, longArg: []string{"format", "output"}},
		"flock":   {flags: "sxunoFe", args: "wE", code: "c", longFlag: []string{"shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose"}, longArg: []string{"timeout", "wait", "conflict-exit-code"}, longCode: []string{"command"}, operands: 1},
	}
})

// scripted programs take a script of their own language as their first
// operand or with -e/-f: a value there is code (GNU sed's e command and
// flag run a shell; awk's system() and pipes do); values in the operands
// after it are files.
var scripted = sync.OnceValue(func() map[string]optGrammar {
	scripted := map[string]optGrammar{
		"sed": {flags: "nrEsuz", args: "l", code: "ef", attached: "i", longFlag: []string{"quiet", "silent", "debug", "posix", "regexp-extended", "separate", "unbuffered", "null-data", "zero-terminated", "follow-symlinks", "sandbox", "in-place", "help", "version"},
			longArg: []string{"line-length"}, longCode: []string{"expression", "file"}},
		"awk": {flags: "bcCdDghLMnNoOpPrsStVY", args: "vFW", code: "efEil", longFlag: []string{"characters-as-bytes", "traditional", "copyright", "dump-variables", "debug", "gen-pot", "help", "lint", "bignum", "use-lc-numeric", "non-decimal-data", "pretty-print", "optimize", "profile", "posix", "re-interval", "no-optimize", "sandbox", "lint-old", "version"},
			longArg: []string{"assign", "field-separator"}, longCode: []string{"file", "source", "exec", "include", "load"}},
	}
	for _, n := range []string{"gawk", "mawk", "nawk"} {
		scripted[n] = scripted["awk"]
	}
	scripted["gsed"] = scripted["sed"]
	return scripted
})

// nameTakers take variable names as arguments, and bash evaluates a
// subscript in a name as code (read 'a[$(id)]').
var nameTakers = map[string]bool{"read": true, "mapfile": true, "readarray": true, "getopts": true, "unset": true, "wait": true}

// optScan is where a program's options end.
type optScan struct {
	next    int   // the first operand
	code    []int // the words that are code arguments of options
	shell   bool  // an option makes it run its command through a shell
	unknown bool  // an option nerve does not know: it may take an argument
	opts    []int // option words and their arguments
}

// scanOptions reads the options of ws[from:] by g.
func scanOptions(ws []cmdWord, from int, g optGrammar) optScan {
	s := optScan{next: len(ws)}
	j := from
	for ; j < len(ws); j++ {
		w := ws[j]
		if g.assigns && nameChars().MatchString(w.prefix) {
			s.opts = append(s.opts, j)
			continue
		}
		if !w.isLit || !strings.HasPrefix(w.lit, "-") || w.lit == "-" {
			break
		}
		s.opts = append(s.opts, j)
		if w.lit == "--" {
			j++
			break
		}
		if strings.HasPrefix(w.lit, "--") {
			name, _, eq := strings.Cut(w.lit[2:], "=")
			withArg := func() {
				if !eq && j+1 < len(ws) {
					j++
					s.opts = append(s.opts, j)
				}
			}
			switch {
			case contains(g.longCode, name):
				if name == "shell" || name == "login" {
					s.shell = true
					break
				}
				if eq {
					s.code = append(s.code, j)
				} else if j+1 < len(ws) {
					s.code = append(s.code, j+1)
				}
				withArg()
			case contains(g.longArg, name):
				withArg()
			case contains(g.longFlag, name):
			default:
				s.unknown = true
			}
			continue
		}
		cluster := w.lit[1:]
		for k := 0; k < len(cluster); k++ {
			c := cluster[k]
			rest := cluster[k+1:]
			has := func(set string) bool { return strings.IndexByte(set, c) >= 0 }
			switch {
			case has(g.code):
				if rest != "" {
					s.code = append(s.code, j)
				} else if j+1 < len(ws) {
					j++
					s.code = append(s.code, j)
					s.opts = append(s.opts, j)
				}
				k = len(cluster)
			case has(g.args):
				if rest == "" && j+1 < len(ws) {
					j++
					s.opts = append(s.opts, j)
				}
				k = len(cluster)
			case has(g.attached):
				k = len(cluster)
			case has(g.shell):
				s.shell = true
			case has(g.flags):
			default:
				s.unknown = true
			}
		}
	}
	for n := 0; n < g.operands && j < len(ws); n++ {
		s.opts = append(s.opts, j)
		j++
	}
	s.next = j
	return s
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// resolveQuiet finds the program a command runs, through wrappers: its
// name and index in ws ("" when a value or an expansion names it).
func resolveQuiet(ws []cmdWord) (string, int) {
	i := 0
	for i < len(ws) {
		if !ws[i].isLit {
			return "", i
		}
		name := path.Base(ws[i].lit)
		g, ok := wrappers()[name]
		if !ok {
			return name, i
		}
		s := scanOptions(ws, i+1, g)
		if s.shell || s.unknown || len(s.code) > 0 {
			return name, i
		}
		i = s.next
	}
	return "", len(ws)
}

// command checks a simple command's words: no value names the program,
// reaches an interpreter or a wrapper's options, or is a name bash
// evaluates; and notes the references that begin an argument where the
// program reads options. It returns the program and its index.
func (a *shellAnalysis) command(ws []cmdWord) (string, int) {
	i := 0
	for i < len(ws) {
		w := ws[i]
		if w.c.any() {
			a.refuse(w.c.first(), "it names the program to run, so a value could run any program: write the program's name in the command")
			return "", i
		}
		if !w.isLit {
			if rest := carriedFrom(ws[i+1:]); rest.any() {
				a.refuse(rest.first(), "the program it is given to is chosen only when the command runs, so nerve cannot tell what it does with it: name the program in the command")
			}
			return "", i
		}
		name := path.Base(w.lit)
		g, isWrapper := wrappers()[name]
		if !isWrapper {
			a.program(name, ws[i:])
			return name, i
		}
		s := scanOptions(ws, i+1, g)
		for _, j := range s.opts {
			if c := ws[j].c; c.any() {
				if g.assigns && nameChars().MatchString(ws[j].prefix) {
					if v := strings.TrimSuffix(ws[j].prefix, "="); codeVariable(v) {
						a.refuse(c.first(), "it is assigned to %s, whose value programs run as code", v)
					}
					continue
				}
				a.refuse(c.first(), "it stands among the options of %s, which runs the program named after them: write the value after the program", name)
			}
		}
		switch {
		case s.shell || len(s.code) > 0:
			if rest := carriedFrom(ws[i+1:]); rest.any() {
				a.refuse(rest.first(), "%s runs its command through a shell here (%s), which reads a value in it as code", name, w.lit)
			}
			return name, i
		case s.unknown:
			if rest := carriedFrom(ws[i+1:]); rest.any() {
				a.refuse(rest.first(), "%s has an option nerve does not know, so it cannot tell which program %s runs: put the value in an environment variable (X=${inputs.x} %s …) or write the program's options after it", name, name, name)
			}
			return name, i
		}
		i = s.next
	}
	return "", i
}

// carriedFrom is what ws carry together.
func carriedFrom(ws []cmdWord) carried {
	var c carried
	for _, w := range ws {
		c.refs, c.other = append(c.refs, w.c.refs...), c.other || w.c.other
	}
	return c
}

// program checks the arguments of program name (ws[0] is its name).
func (a *shellAnalysis) program(name string, ws []cmdWord) {
	args := ws[1:]
	if why, ok := interpreter(name); ok {
		if c := carriedFrom(args); c.any() {
			a.refuse(c.first(), "it is an argument of %s, %s: pass it in an environment variable (X=${inputs.x} %s …) or on standard input instead, where the program reads it as data", name, why, name)
		}
		return
	}
	if g, ok := scripted()[name]; ok {
		s := scanOptions(ws, 1, g)
		for _, j := range s.code {
			if c := ws[j].c; c.any() {
				a.refuse(c.first(), "it is in the script of %s, which can run commands (sed's e, awk's system()): pass it through a file or, for awk, -v name=value", name)
			}
		}
		if s.unknown {
			if c := carriedFrom(args); c.any() {
				a.refuse(c.first(), "%s has an option nerve does not know, so it cannot tell which argument is the script: write the value after the script and known options", name)
			}
			return
		}
		if len(s.code) == 0 && s.next < len(ws) {
			if c := ws[s.next].c; c.any() {
				a.refuse(c.first(), "it is in the script of %s, which can run commands (sed's e, awk's system()): pass it through a file or, for awk, -v name=value", name)
			}
			a.leads(name, ws[s.next+1:])
			return
		}
		a.leads(name, ws[s.next:])
		return
	}
	if nameTakers[name] {
		if c := carriedFrom(args); c.any() {
			a.refuse(c.first(), "it is an argument of %s, which takes variable names, and bash evaluates a subscript in a name (a[$(cmd)]) as code", name)
		}
		return
	}
	switch name {
	case "printf":
		for k, w := range args {
			if w.isLit && strings.HasPrefix(w.lit, "-v") {
				target := w
				if w.lit == "-v" && k+1 < len(args) {
					target = args[k+1]
				}
				if target.c.any() {
					a.refuse(target.c.first(), "it is the variable name of printf -v, and bash evaluates a subscript in a name (a[$(cmd)]) as code")
				}
			}
		}
	case "test", "[":
		for _, w := range args {
			if w.isLit && (w.lit == "-v" || w.lit == "-R") {
				if c := carriedFrom(args); c.any() {
					a.refuse(c.first(), "%s %s evaluates a subscript in the name it tests (a[$(cmd)]) as code", name, w.lit)
				}
			}
		}
	case "find":
		a.find(ws)
		return
	}
	// A program not known here may still hand a value on to an
	// interpreter named in its arguments: docker run img sh -c …,
	// unshare bash -c ….
	for k, w := range args {
		if !w.isLit {
			continue
		}
		if _, ok := interpreter(path.Base(w.lit)); ok {
			if c := carriedFrom(args[k+1:]); c.any() {
				a.refuse(c.first(), "it follows %s in the arguments of %s, which may run it with the value as code; if it does not, put the value before it or in an environment variable", w.lit, name)
				return
			}
		}
	}
	a.leads(name, args)
}

// find checks find's -exec commands as commands of their own.
func (a *shellAnalysis) find(ws []cmdWord) {
	var plain []cmdWord
	for k := 1; k < len(ws); k++ {
		w := ws[k]
		if w.isLit && (w.lit == "-exec" || w.lit == "-execdir" || w.lit == "-ok" || w.lit == "-okdir") {
			end := k + 1
			for end < len(ws) && !(ws[end].isLit && (ws[end].lit == ";" || ws[end].lit == "+")) {
				end++
			}
			a.command(ws[k+1 : end])
			k = end
			continue
		}
		plain = append(plain, w)
	}
	a.leads("find", plain)
}

// leads notes the arguments that begin with a value before any "--": a
// value there must not begin with '-' (checked when the command runs).
func (a *shellAnalysis) leads(prog string, args []cmdWord) {
	for _, w := range args {
		if w.isLit && endOfOptions(w.lit) {
			return
		}
		if len(w.lead) > 0 {
			a.c.leads = append(a.c.leads, optionLead{refs: w.lead, prog: prog})
		}
	}
}

// readsCode reports whether prog (run with ws) reads a program from its
// standard input: a shell or interpreter with no script named, or one
// that always does (xargs, ssh, sqlite3).
func readsCode(prog string, ws []cmdWord) bool {
	if _, ok := interpreter(prog); !ok {
		return false
	}
	switch prog {
	case "xargs", "parallel", "ssh", "rsh", "at", "batch", "sqlite3", "psql", "mysql", "su", "runuser", "sg", "ed", "ex", "gdb":
		return true
	}
	_, i := resolveQuiet(ws)
	for _, w := range ws[i+1:] {
		if !w.isLit {
			return true
		}
		switch w.lit {
		case "-", "-s", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
			return true
		}
		if !strings.HasPrefix(w.lit, "-") {
			return false // a script is named
		}
	}
	return true
}

var nameChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) })

// codeVariable reports whether programs run a variable's value as code,
// or let it choose what runs: PATH, PS4, BASH_ENV, LD_PRELOAD, PAGER, ….
func codeVariable(name string) bool {
	for _, p := range []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_LOADABLES_PATH", "GCONV_PATH", "MAILPATH", "FCEDIT",
		"PERL5OPT", "PERL5LIB", "PERLLIB", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB",
		"GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_PAGER", "GIT_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "GIT_PROXY_COMMAND",
		"SSH_ASKPASS", "SUDO_ASKPASS", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "LESSOPEN", "LESSCLOSE":
		return true
	}
	return false
}
