package graphlang

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Quoting for the shell (docs/graphs.md, "Quoting"). A reference placed
// into an argument that a tool runs as shell code (the argument its
// _meta names, node.MetaShell) is quoted for the place it stands in:
// GitHub Actions' script injection, `run: echo ${{ github.event.issue.title }}`,
// is the attack this stops. The template's literal text is the graph
// author's shell code; only the values are quoted.

// shellCtx is where in a shell command a reference stands.
type shellCtx int

const (
	shUnquoted    shellCtx = iota // a word of its own: 'value'
	shSingle                      // inside '...'
	shDouble                      // inside "..."
	shDollarQuote                 // inside $'...'
	shArith                       // inside $((...)): only numbers
	shParam                       // inside ${...} (written $${...}): refused
	shComment                     // after # on a line: no newlines
	shHeredoc                     // in a here-document: refused
)

func (c shellCtx) String() string {
	return [...]string{"a word", "single quotes", "double quotes", "$'...'", "$((...))", "a ${...} expansion", "a comment", "a here-document"}[c]
}

// shellFrame is one level of nesting: the command itself, $(...), `...`,
// (...), $((...)) or ${...}, each with its own quoting.
type shellFrame struct {
	kind  byte // 0 top, '$' $(, '`' backtick, '(' subshell, 'a' $(( or ((, 'b' $[, '{' ${
	quote shellCtx
}

// shellPlace is where a reference stands: its context, and inside how many
// `...` (whose text the shell reads once more, backslashes first).
type shellPlace struct {
	ctx       shellCtx
	backticks int
	// after is the character the reference follows that would change what
	// its quotes mean: a '\\' escaping the first quote, a '$' making
	// 'v' $'v' (0 for none).
	after byte
	// word numbers the shell words; bracket says the word held a '['
	// before the reference (quoted or not: x="a[${v}]" read by $((x))
	// evaluates the subscript).
	word    int
	bracket bool
}

// expansionAt reports the frame an expansion opens at lit[j] — $((
// arithmetic 'a', $[ arithmetic 'b', $( '$', ${ '{' — and its length, 0
// for none. Quoted or not, each opens the same frame.
func expansionAt(lit string, j int) (kind byte, n int) {
	rest := lit[j:]
	switch {
	case strings.HasPrefix(rest, "$(("):
		return 'a', 3
	case strings.HasPrefix(rest, "$["):
		return 'b', 2
	case strings.HasPrefix(rest, "$("):
		return '$', 2
	case strings.HasPrefix(rest, "${"):
		return '{', 2
	}
	return 0, 0
}

// shellContexts returns the place of each reference of ts: the quoting
// state after lits[0..i].
func shellContexts(ts *tstring) []shellPlace {
	out := make([]shellPlace, len(ts.refs))
	stack := []shellFrame{{}}
	comment, heredocPending, heredoc := false, false, false
	wordStart := true
	word, bracket := 0, false
	for i, lit := range ts.lits {
		escapesRef := false // lit ends in a backslash that escapes what follows
		dollarEnds := false // lit ends in an unquoted '$' of its own
		for j := 0; j < len(lit); j++ {
			c := lit[j]
			next := byte(0)
			if j+1 < len(lit) {
				next = lit[j+1]
			}
			top := &stack[len(stack)-1]
			if heredoc {
				continue
			}
			if comment {
				if c == '\n' {
					comment, wordStart = false, true
					if heredocPending {
						heredoc = true
					}
				}
				continue
			}
			if c == '[' {
				bracket = true
			}
			switch top.quote {
			case shSingle:
				if c == '\'' {
					top.quote = shUnquoted
				}
				continue
			case shDollarQuote:
				if c == '\\' {
					escapesRef = j == len(lit)-1
					j++
				} else if c == '\'' {
					top.quote = shUnquoted
				}
				continue
			case shDouble:
				switch {
				case c == '\\':
					escapesRef = j == len(lit)-1
					j++
				case c == '"':
					top.quote = shUnquoted
				case c == '`':
					stack = append(stack, shellFrame{kind: '`'})
				default:
					if exp, n := expansionAt(lit, j); n > 0 {
						stack = append(stack, shellFrame{kind: exp})
						j += n - 1
					}
				}
				continue
			}
			// Unquoted.
			ws := wordStart
			if ws {
				word++
				bracket = c == '['
			}
			wordStart = false
			dollarEnds = c == '$' && j == len(lit)-1
			exp, expLen := expansionAt(lit, j)
			switch {
			case c == '\\':
				escapesRef = j == len(lit)-1
				j++
			case c == '\'':
				top.quote = shSingle
			case c == '"':
				top.quote = shDouble
			case c == '$' && next == '\'':
				top.quote = shDollarQuote
				j++
			case expLen > 0:
				stack = append(stack, shellFrame{kind: exp})
				j += expLen - 1
			case c == '[' && ws && next == '[':
				j++ // [[ ... ]]
			case c == '[' && !ws:
				// name[...] (and any '[' inside a word): an array subscript,
				// evaluated as arithmetic with its text read as if in
				// double quotes wherever it is (a[..]=v, unset a[..],
				// x=a[..] read later by $((x)) or declare -i).
				stack = append(stack, shellFrame{kind: 'b'})
			case c == '(' && next == '(':
				// (( ... )) is arithmetic, its text read as if in double
				// quotes: '...' quotes nothing there.
				stack = append(stack, shellFrame{kind: 'a'})
				j++
			case c == '`':
				if top.kind == '`' {
					stack = stack[:len(stack)-1]
				} else {
					stack = append(stack, shellFrame{kind: '`'})
				}
			case c == '(':
				stack = append(stack, shellFrame{kind: '('})
				wordStart = true
			case c == ')' && len(stack) > 1 && (top.kind == '$' || top.kind == '(' || top.kind == 'a'):
				if top.kind == 'a' && next == ')' {
					j++
				}
				stack = stack[:len(stack)-1]
			case c == '}' && len(stack) > 1 && top.kind == '{':
				stack = stack[:len(stack)-1]
			case c == ']' && len(stack) > 1 && top.kind == 'b':
				stack = stack[:len(stack)-1]
			case c == '#' && ws && top.kind != 'a' && top.kind != 'b' && top.kind != '{':
				comment = true
			case c == '<' && next == '<' && (j+2 >= len(lit) || lit[j+2] != '<'):
				heredocPending = true
				j++
			case c == '\n':
				wordStart = true
				if heredocPending {
					heredoc = true
				}
			case c == ' ' || c == '\t' || c == ';' || c == '|' || c == '&':
				wordStart = true
			}
		}
		if i < len(out) {
			top := stack[len(stack)-1]
			if wordStart {
				word++
				bracket = false
			}
			out[i].word, out[i].bracket = word, bracket
			arith := false
			for _, f := range stack {
				if f.kind == '`' {
					out[i].backticks++
				}
				// Whatever a $((...)) holds is evaluated as arithmetic,
				// quoted or inside a $(...) of its own.
				arith = arith || f.kind == 'a' || f.kind == 'b'
			}
			switch {
			case escapesRef && !heredoc && !comment:
				out[i].after = '\\'
			case dollarEnds && !heredoc && !comment:
				out[i].after = '$'
			}
			switch {
			case heredoc:
				out[i].ctx = shHeredoc
			case comment:
				out[i].ctx = shComment
			case arith:
				out[i].ctx = shArith
			case top.quote != shUnquoted:
				out[i].ctx = top.quote
			case top.kind == '{':
				out[i].ctx = shParam
			default:
				out[i].ctx = shUnquoted
			}
			// A value is one word: whatever follows it starts none.
			wordStart = false
		}
	}
	return out
}

var shellNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`) }) // compiled on first use, not at every start

// arithmeticHazard reports whether v could run a command where bash
// evaluates it as arithmetic: `[[ 'a[$(id)]' -eq 1 ]]`, `(( 'a[$(id)]' ))`,
// `let`, `declare -i`, `arr['$(id)']=1` all run id, quoting
// notwithstanding, because a variable's subscript is expanded when the
// expression is evaluated. Such a subscript needs a '[' followed by a
// backtick or by '$' and '(', '{', '[', a letter or '_' (a parameter
// whose value might be an expression in turn); "$5" or "[1, 2]" is fine.
// bracketBefore says an earlier value of the command held a '[' (two
// values glued, "a[" and "$(id)]", make one subscript).
func arithmeticHazard(v string, bracketBefore bool) bool {
	rest := v
	if !bracketBefore {
		open := strings.IndexByte(v, '[')
		if open < 0 {
			return false
		}
		rest = v[open:]
	}
	if strings.IndexByte(rest, '`') >= 0 {
		return true
	}
	for i := 0; i+1 < len(rest); i++ {
		if rest[i] != '$' {
			continue
		}
		c := rest[i+1]
		if c == '(' || c == '{' || c == '[' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// quoteAt quotes v for place p, or says why it cannot be placed there.
func quoteAt(p shellPlace, v string, bracketBefore bool) (string, error) {
	switch p.after {
	case '\\':
		return "", fmt.Errorf("a reference right after a backslash cannot be quoted safely (the backslash would escape the quote): remove the backslash")
	case '$':
		return "", fmt.Errorf("a reference right after a '$' cannot be quoted safely ($'...' reads escapes): remove the '$' or put a space or quotes between")
	}
	if p.ctx != shArith && arithmeticHazard(v, bracketBefore) {
		return "", fmt.Errorf("the value %q holds (or ends) a subscript with an expansion, which bash runs as a command wherever it evaluates arithmetic ((( )), let, [[ -eq ]], declare -i, array subscripts), quoted or not: pass it through a file or stdin instead", FirstLine(v))
	}
	q, err := quoteFor(p.ctx, v)
	for range p.backticks {
		q = backtickQuoter.Replace(q)
	}
	return q, err
}

// quoteFor quotes v for context c, or says why it cannot be placed there.
func quoteFor(c shellCtx, v string) (string, error) {
	if strings.IndexByte(v, 0) >= 0 {
		return "", fmt.Errorf("the value holds a NUL byte, which no shell command can carry")
	}
	switch c {
	case shUnquoted:
		return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'", nil
	case shSingle:
		return strings.ReplaceAll(v, "'", `'\''`), nil
	case shDouble:
		return doubleQuoter.Replace(v), nil
	case shDollarQuote:
		return dollarQuoter.Replace(v), nil
	case shArith:
		if shellNumber().MatchString(strings.TrimSpace(v)) {
			return v, nil
		}
		return "", fmt.Errorf("inside $((...)) only a number can be placed, not %q", FirstLine(v))
	case shComment:
		if strings.ContainsAny(v, "\r\n") {
			return "", fmt.Errorf("a value with a line break cannot be placed in a shell comment")
		}
		return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'", nil
	}
	return "", fmt.Errorf("a reference inside %s cannot be quoted safely; place it in a word or in quotes, or mark it ${raw ...} if the graph's callers may run commands", c)
}

var (
	doubleQuoter = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	dollarQuoter = strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	// Inside `...` the shell first turns \\ into \ and \` into `.
	backtickQuoter = strings.NewReplacer(`\`, `\\`, "`", "\\`", "$", `\$`)
)

// shellEval is ts's value with every reference quoted for the shell
// (except those marked raw).
func shellEval(ts *tstring, sc *Scope) (string, error) {
	ctxs := shellContexts(ts)
	var b strings.Builder
	bracket, word := false, -1 // the word so far held a '['
	for i, r := range ts.refs {
		b.WriteString(ts.lits[i])
		x, err := sc.resolve(r)
		if err != nil {
			return "", err
		}
		v := Text(x)
		if r.Filter != FilterRaw {
			if ctxs[i].word != word {
				word, bracket = ctxs[i].word, false
			}
			bracket = bracket || ctxs[i].bracket
			q, err := quoteAt(ctxs[i], v, bracket)
			if err != nil {
				return "", fmt.Errorf("${%s} in a shell command: %w", r.Src, err)
			}
			bracket = bracket || strings.IndexByte(v, '[') >= 0
			v = q
		}
		b.WriteString(v)
	}
	b.WriteString(ts.lits[len(ts.lits)-1])
	return b.String(), nil
}

// shellRefProblems lists, for a string placed into shell code, each
// reference that could never be quoted there (an error at add time) and
// each marked raw (a warning).
func shellRefProblems(ts *tstring) (bad []string, raw []*Ref) {
	ctxs := shellContexts(ts)
	for i, r := range ts.refs {
		if r.Filter == FilterRaw {
			raw = append(raw, r)
			continue
		}
		switch ctxs[i].ctx {
		case shParam, shHeredoc:
			bad = append(bad, fmt.Sprintf("${%s} stands inside %s, where it cannot be quoted safely; place it in a word or in quotes (or mark it ${raw ...} if the graph's callers may run commands)", r.Src, ctxs[i].ctx))
		}
	}
	return bad, raw
}

// evalArgs is a step's arguments in sc; the argument named shellArg (the
// one the tool runs as shell code, "" for none) has its references quoted.
func (t *Template) EvalArgs(sc *Scope, shellArg string) (any, error) {
	if t == nil {
		return nil, nil
	}
	m, ok := t.v.(map[string]any)
	if !ok || shellArg == "" {
		return evalValue(t.v, sc)
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		var x any
		var err error
		if ts, isT := e.(*tstring); isT && k == shellArg {
			x, err = shellEval(ts, sc)
		} else {
			x, err = evalValue(e, sc)
		}
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}

// shellCheck finds, in the steps' shell commands (the argument a tool's
// _meta marks, and strings with a ${shell ...} reference), references
// that cannot be quoted where they stand (bad) and those marked raw
// (warn: whoever calls the graph may run commands through them).
func shellCheck(d *Def, tools map[string]*mcp.Tool) (bad, warn Errors) {
	for _, s := range d.Steps {
		if s.Args == nil {
			continue
		}
		shellArg := ""
		if t, ok := tools[s.Call]; ok {
			shellArg = node.ShellArg(t.Meta)
		}
		// arg is the top-level argument v is, or is inside of.
		var walk func(v any, arg string, top bool)
		walk = func(v any, arg string, top bool) {
			switch v := v.(type) {
			case *tstring:
				if !v.shell && (!top || shellArg == "" || arg != shellArg) {
					return
				}
				b, raw := shellRefProblems(v)
				for _, m := range b {
					bad = append(bad, &Error{Pos: s.Args.at(v.refs[0]), Msg: fmt.Sprintf("step %s: %s", s.ID, m)})
				}
				for _, r := range raw {
					warn = append(warn, &Error{Pos: s.Args.at(r), Msg: fmt.Sprintf("step %s: ${%s} reaches %s's shell command unquoted: whoever calls the graph can run commands through it; drop `raw` unless that is meant", s.ID, r.Src, s.Call)})
				}
			case map[string]any:
				for _, e := range v {
					walk(e, arg, false)
				}
			case []any:
				for _, e := range v {
					walk(e, arg, false)
				}
			}
		}
		if m, ok := s.Args.v.(map[string]any); ok {
			for k, e := range m {
				walk(e, k, true)
			}
		}
	}
	sortErrors(bad)
	sortErrors(warn)
	return bad, warn
}

// ShellWarnings lists the references marked raw that reach a shell
// command: `nerve graph add` prints them.
func ShellWarnings(d *Def, tools map[string]*mcp.Tool) Errors {
	_, warn := shellCheck(d, tools)
	return warn
}

func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Pos, es[j].Pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
}

// Sorted returns es in the order of their places in the file.
func Sorted(es Errors) Errors {
	sortErrors(es)
	return es
}
