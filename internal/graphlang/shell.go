package graphlang

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Values and the shell (docs/graphs.md): a graph's values reach a shell
// only as variables the shell expands itself. A reference in a step's
// shell command (the argument its tool's _meta marks, node.MetaShell)
// becomes a positional parameter of that one command — `wc -l
// ${inputs.file}` runs as `wc -l "${1}"` with $1 given beside it
// (node.MetaShellArgs) — so the value is never program text. The command
// is parsed by a real bash parser (mvdan.cc/sh) to find where each
// reference stands: where even a variable is unsafe (arithmetic, a
// subscript, a second interpreter such as `bash -c` or `sed …/e`) or
// where the shell would not expand one (single quotes, a quoted
// here-document), the graph is refused when it is added. shellcmd.go holds
// the programs a value may not reach.

// shellCommand is a shell command with references, compiled once.
type shellCommand struct {
	text string // the command with each reference as "${N}"
	// slot is, for each reference of the string, its positional
	// parameter (1-based); one per distinct reference.
	slot  []int
	slots int
	at    []cmdPos // where each reference is written in the command
	// leads are the references that begin an argument where the program
	// reads options (before any --): a value there must not begin with
	// '-' (docs/graphs.md, "Options").
	leads []optionLead
	// assigned marks the references whose value is assigned to a shell
	// variable, where bash evaluates a subscript in it if the variable is
	// an integer (declare -i, maybe from an earlier call).
	assigned []bool
	problems []shellProblem
}

// cmdPos is a place in a command: line and column, 1-based.
type cmdPos struct{ line, col int }

// optionLead is a word that begins with references (refs, in order, with
// no text between them), read by prog where it reads options.
type optionLead struct {
	refs []int
	prog string
}

// shellProblem is a reference placed where its value could run as code
// (or, with placement, where no variable is expanded at all).
type shellProblem struct {
	ref int
	msg string
	// placement: the shell would not expand a variable there, so the
	// value could not reach the command even with unsafe_shell.
	placement bool
}

// shellCommand is ts compiled as a shell command, once.
func (ts *tstring) shellCommand() *shellCommand {
	ts.shellOnce.Do(func() { ts.shellCmd = compileShell(ts) })
	return ts.shellCmd
}

// compileShell writes ts with each reference as a positional parameter,
// parses it as bash and finds where each reference stands.
func compileShell(ts *tstring) *shellCommand {
	c := &shellCommand{slot: make([]int, len(ts.refs)), at: make([]cmdPos, len(ts.refs)), assigned: make([]bool, len(ts.refs))}
	var b, orig strings.Builder
	slots := map[string]int{}
	refAt := map[uint]int{}
	offs := make([]uint, len(ts.refs))
	for i, r := range ts.refs {
		b.WriteString(ts.lits[i])
		orig.WriteString(ts.lits[i])
		c.at[i] = posIn(orig.String())
		orig.WriteString("${" + r.Src + "}")
		key := strings.Join(strings.Fields(r.Src), " ")
		n, ok := slots[key]
		if !ok {
			n = len(slots) + 1
			slots[key] = n
		}
		c.slot[i], c.slots = n, len(slots)
		refAt[uint(b.Len())], offs[i] = i, uint(b.Len())
		fmt.Fprintf(&b, "${%d}", n)
	}
	b.WriteString(ts.lits[len(ts.lits)-1])
	src := b.String()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		var pe syntax.ParseError
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = pe.Text
		}
		c.problems = append(c.problems, shellProblem{ref: 0, placement: true, msg: fmt.Sprintf("the command is not valid bash (%s), so where its references stand cannot be known; fix the command", msg)})
		c.text = src
		return c
	}
	a := &shellAnalysis{c: c, refAt: refAt, found: make([]bool, len(ts.refs)), tainted: map[string]bool{}}
	a.taint(f)
	var quotes []uint // offsets where a quote goes in: around unquoted references
	var stack []syntax.Node
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch n := n.(type) {
		case *syntax.ParamExp:
			if i, ok := refAt[n.Pos().Offset()]; ok && !n.Short && n.Param != nil {
				a.found[i] = true
				if a.place(i, stack) {
					quotes = append(quotes, n.Pos().Offset(), n.End().Offset())
				}
			}
		case *syntax.Stmt:
			a.stmt(n)
		}
		stack = append(stack, n)
		return true
	})
	for i, ok := range a.found {
		if !ok {
			c.problems = append(c.problems, shellProblem{ref: i, placement: true, msg: unexpanded(f, ts, i, offs[i])})
		}
	}
	// Quote the unquoted references, back to front: each is one word.
	// (Walk visits a statement's redirections after its words.)
	slices.Sort(quotes)
	out := []byte(src)
	for k := len(quotes) - 1; k >= 0; k-- {
		at := quotes[k]
		out = append(out[:at], append([]byte{'"'}, out[at:]...)...)
	}
	c.text = string(out)
	return c
}

// posIn is the place just after s.
func posIn(s string) cmdPos {
	line := 1 + strings.Count(s, "\n")
	return cmdPos{line, len([]rune(s[strings.LastIndexByte(s, '\n')+1:])) + 1}
}

// unexpanded says why the reference ts.refs[i] is where the shell
// expands no variable.
func unexpanded(f *syntax.File, ts *tstring, i int, off uint) string {
	lit := ts.lits[i]
	switch {
	case strings.HasSuffix(lit, "\\"):
		return "it stands right after a backslash, which makes its ${ plain text: remove the backslash"
	case strings.HasSuffix(lit, "$"):
		return "it stands right after a '$', which the shell reads with its ${ as something else: remove the '$' or put a space or quotes between"
	}
	why := "it stands where the shell expands no variable"
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			return true
		}
		if n.Pos().Offset() > off || n.End().Offset() <= off {
			return true
		}
		switch n := n.(type) {
		case *syntax.SglQuoted:
			if n.Dollar {
				why = "it stands inside $'...', where the shell expands no variable: close the quotes before it ($'a\\n'${inputs.x}) or use double quotes"
			} else {
				why = "it stands inside single quotes, where the shell expands no variable: close the quotes before it ('a '${inputs.x}' b') or use double quotes"
			}
		case *syntax.Comment:
			why = "it stands in a comment: remove it"
		case *syntax.Redirect:
			if n.Hdoc != nil && n.Hdoc.Pos().Offset() <= off {
				why = "it stands in a here-document whose delimiter is quoted (<<'EOF'), where the shell expands nothing: unquote the delimiter"
			}
		case *syntax.ExtGlob:
			why = "it stands inside an extended glob pattern, which the shell does not expand: match against a variable set before"
		}
		return true
	})
	return why
}

// shellAnalysis finds where each reference of a parsed command stands.
type shellAnalysis struct {
	c     *shellCommand
	refAt map[uint]int
	found []bool
	// tainted are the variables the command sets from a value: their
	// expansions carry it on.
	tainted map[string]bool
}

func (a *shellAnalysis) refuse(ref int, format string, args ...any) {
	for _, p := range a.c.problems {
		if p.ref == ref && p.msg == fmt.Sprintf(format, args...) {
			return
		}
	}
	a.c.problems = append(a.c.problems, shellProblem{ref: ref, msg: fmt.Sprintf(format, args...)})
}

// carried is what of a graph's values a piece of the command holds: the
// references in it, and whether it expands a positional parameter the
// author wrote ($1, "$@": they are the values too) or a variable set from
// a value.
type carried struct {
	refs  []int
	other bool
}

func (c carried) any() bool { return len(c.refs) > 0 || c.other }

// first is the reference to name in a message about c.
func (c carried) first() int {
	if len(c.refs) > 0 {
		return c.refs[0]
	}
	return 0
}

func (a *shellAnalysis) carried(n syntax.Node) carried {
	var c carried
	if n == nil {
		return c
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		pe, ok := n.(*syntax.ParamExp)
		if !ok {
			return true
		}
		if i, ours := a.refAt[pe.Pos().Offset()]; ours && pe.Param != nil && !pe.Short {
			c.refs = append(c.refs, i)
		} else if pe.Param != nil && (positional(pe.Param.Value) || a.tainted[pe.Param.Value]) {
			c.other = true
		}
		return true
	})
	return c
}

// positional reports whether name is a positional parameter, or all of
// them ($@, $*): the values of a graph's references.
func positional(name string) bool {
	if name == "@" || name == "*" {
		return true
	}
	n, err := strconv.Atoi(name)
	return err == nil && n > 0
}

// taint finds the variables set from values, to a fixed point: x=${v};
// y=$x.
func (a *shellAnalysis) taint(f *syntax.File) {
	for changed := true; changed; {
		changed = false
		mark := func(name string, n syntax.Node) {
			if name != "" && !a.tainted[name] && a.carried(n).any() {
				a.tainted[name], changed = true, true
			}
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				if n.Name != nil {
					if n.Value != nil {
						mark(n.Name.Value, n.Value)
					}
					if n.Array != nil {
						mark(n.Name.Value, n.Array)
					}
				}
			case *syntax.ForClause:
				if wi, ok := n.Loop.(*syntax.WordIter); ok {
					for _, w := range wi.Items {
						mark(wi.Name.Value, w)
					}
				}
			case *syntax.Stmt:
				// read x <<< ${inputs.v}: x holds the value.
				call, ok := n.Cmd.(*syntax.CallExpr)
				if !ok || len(call.Args) == 0 || !nameTakers[call.Args[0].Lit()] {
					break
				}
				for _, r := range n.Redirs {
					for _, w := range call.Args[1:] {
						if name := w.Lit(); name != "" && !strings.HasPrefix(name, "-") {
							mark(name, r)
						}
					}
				}
			}
			return true
		})
	}
}

// place checks where reference i stands (stack: the nodes above its
// expansion) and reports whether it needs quotes to stay one word.
func (a *shellAnalysis) place(i int, stack []syntax.Node) (quote bool) {
	arith, hdoc := false, false
	for k := len(stack) - 1; k >= 0; k-- {
		var below syntax.Node
		if k+1 < len(stack) {
			below = stack[k+1]
		}
		switch n := stack[k].(type) {
		case *syntax.ParamExp:
			a.refuse(i, "it stands inside a ${...} expansion, whose operators may evaluate it (offsets and subscripts are arithmetic): set a variable first and expand that")
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop, *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm:
			arith = true
		case *syntax.Assign:
			if below != nil && any(below) == any(n.Index) {
				arith = true
			} else {
				a.c.assigned[i] = true
			}
		case *syntax.ArrayElem:
			if below != nil && any(below) == any(n.Index) {
				arith = true
			}
		case *syntax.CmdSubst:
			if n.Backquotes {
				a.refuse(i, "it stands inside backticks, whose text the shell reads twice: use $(...) instead")
			}
		case *syntax.Redirect:
			switch {
			case below == nil:
			case below == n.Hdoc:
				hdoc = true
			case below == n.Word && (n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc):
				a.c.problems = append(a.c.problems, shellProblem{ref: i, placement: true, msg: "it stands in a here-document's delimiter, which the shell never expands: write the delimiter as text"})
			case below == n.Word && (n.Op == syntax.DplIn || n.Op == syntax.DplOut):
				a.refuse(i, "it stands after %s, where bash evaluates a file descriptor number as arithmetic: name a file with < or > instead", n.Op)
			}
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				a.refuse(i, "it is an operand of %s in [[ ]], which bash evaluates as arithmetic, running a subscript's $(...) (a[$(cmd)]): compare with [ ] or test instead", n.Op)
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
				a.refuse(i, "it is the name tested by %s, and bash evaluates a subscript in a name (a[$(cmd)]) as code", n.Op)
			}
		}
	}
	if arith {
		a.refuse(i, "it stands where bash evaluates arithmetic ($((...)), ((...)), let, a subscript a[...]), which runs a subscript's $(...) in the value (a[$(cmd)]) whatever the quotes: pass a number through a variable checked first, or do the arithmetic in the program")
	}
	_, inWord := stack[len(stack)-1].(*syntax.Word)
	return inWord && !arith && !hdoc
}

// stmt checks the command a statement runs: the program a value reaches,
// and pipes into a program that reads code from its input.
func (a *shellAnalysis) stmt(st *syntax.Stmt) {
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		for _, as := range cmd.Assigns {
			a.assign(as)
		}
		ws := make([]cmdWord, len(cmd.Args))
		for k, w := range cmd.Args {
			ws[k] = a.word(w)
		}
		if prog, _ := a.command(ws); prog != "" && readsCode(prog, ws) {
			for _, r := range st.Redirs {
				if c := a.carried(r); c.any() {
					a.refuse(c.first(), "it is redirected into %s, which reads its program from there", prog)
				}
			}
		}
	case *syntax.DeclClause:
		a.decl(cmd)
	case *syntax.BinaryCmd:
		if cmd.Op != syntax.Pipe && cmd.Op != syntax.PipeAll {
			return
		}
		var stages []*syntax.Stmt
		var flat func(s *syntax.Stmt)
		flat = func(s *syntax.Stmt) {
			if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
				flat(b.X)
				flat(b.Y)
				return
			}
			stages = append(stages, s)
		}
		flat(cmd.X)
		flat(cmd.Y)
		var up carried
		for _, s := range stages {
			if call, ok := s.Cmd.(*syntax.CallExpr); ok && up.any() {
				ws := make([]cmdWord, len(call.Args))
				for k, w := range call.Args {
					ws[k] = a.word(w)
				}
				if prog, _ := resolveQuiet(ws); prog != "" && readsCode(prog, ws) {
					a.refuse(up.first(), "it is piped into %s, which reads its program from its input", prog)
				}
			}
			c := a.carried(s)
			up.refs, up.other = append(up.refs, c.refs...), up.other || c.other
		}
	}
}

// assign checks an assignment: no value into a variable that holds code.
func (a *shellAnalysis) assign(as *syntax.Assign) {
	if as.Name == nil {
		return
	}
	var c carried
	if as.Value != nil {
		c = a.carried(as.Value)
	}
	if as.Array != nil {
		d := a.carried(as.Array)
		c.refs, c.other = append(c.refs, d.refs...), c.other || d.other
	}
	if c.any() && codeVariable(as.Name.Value) {
		a.refuse(c.first(), "it is assigned to %s, whose value programs run as code", as.Name.Value)
	}
}

// decl checks declare, local, export, readonly, typeset.
func (a *shellAnalysis) decl(d *syntax.DeclClause) {
	flags := ""
	if d.Variant.Value == "nameref" {
		flags = "n"
	}
	var all carried
	for _, as := range d.Args {
		a.assign(as)
		c := a.carried(as)
		all.refs, all.other = append(all.refs, c.refs...), all.other || c.other
		if as.Naked && as.Name == nil && as.Value != nil {
			if lit := as.Value.Lit(); strings.HasPrefix(lit, "-") || strings.HasPrefix(lit, "+") {
				flags += lit
			} else if c.any() {
				a.refuse(c.first(), "it is a name given to %s, and bash evaluates a subscript in a name (a[$(cmd)]) as code", d.Variant.Value)
			}
		}
	}
	if all.any() && strings.ContainsAny(flags, "in") {
		a.refuse(all.first(), "%s %s makes an integer variable or a reference to one, which bash evaluates as arithmetic, running a subscript's $(...) in the value", d.Variant.Value, flags)
	}
}

// cmdWord is a word of a command: a shell word, or an argv element.
type cmdWord struct {
	lit    string // the word, when it is plain text
	isLit  bool
	prefix string // its plain text before the first expansion
	c      carried
	// lead are the references the word begins with (no text before them).
	lead []int
}

// word reads a shell word.
func (a *shellAnalysis) word(w *syntax.Word) cmdWord {
	out := cmdWord{c: a.carried(w), isLit: true}
	var b strings.Builder
	leading := true
	var parts func(ps []syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(unescape(p.Value))
				leading = leading && p.Value == ""
			case *syntax.SglQuoted:
				if p.Dollar {
					out.isLit = false
				}
				b.WriteString(p.Value)
				leading = leading && p.Value == ""
			case *syntax.DblQuoted:
				parts(p.Parts)
			case *syntax.ParamExp:
				if i, ok := a.refAt[p.Pos().Offset()]; ok && leading && !p.Short {
					out.lead = append(out.lead, i)
				} else {
					leading = false
				}
				if out.isLit {
					out.prefix = b.String()
				}
				out.isLit = false
			default:
				if out.isLit {
					out.prefix = b.String()
				}
				out.isLit, leading = false, false
			}
		}
	}
	parts(w.Parts)
	if out.isLit {
		out.lit, out.prefix = b.String(), b.String()
	}
	return out
}

// unescape drops the backslashes of an unquoted literal (\b → b).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// arithmeticHazard reports whether v, read by bash as an arithmetic
// expression, would run a command: a subscript holding an expansion
// (a[$(id)], a[`id`], a[$x] whose x holds one in turn).
func arithmeticHazard(v string) bool {
	open := strings.IndexByte(v, '[')
	if open < 0 {
		return false
	}
	rest := v[open:]
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

// shellValues resolves the references of a compiled command in sc: the
// positional parameters to give it, after the run-time checks (unless
// unsafe): no NUL, no option where a program reads options, no subscript
// with an expansion in an assigned value.
func (ts *tstring) shellValues(c *shellCommand, sc *Scope, unsafe bool) ([]any, error) {
	vals := make([]string, c.slots)
	for i, r := range ts.refs {
		x, err := sc.resolve(r)
		if err != nil {
			return nil, err
		}
		v := Text(x)
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("${%s} holds a NUL byte, which no shell variable can hold: pass such data through a file", r.Src)
		}
		vals[c.slot[i]-1] = v
		if !unsafe && c.assigned[i] && arithmeticHazard(v) {
			return nil, fmt.Errorf("${%s} is %q, assigned to a shell variable: it holds a subscript with an expansion, which bash runs as a command if the variable is an integer (declare -i) or read by $((...)); pass it through a file or stdin instead", r.Src, FirstLine(v))
		}
	}
	if !unsafe {
		for _, l := range c.leads {
			if err := optionValue(ts.refs, l, func(i int) string { return vals[c.slot[i]-1] }); err != nil {
				return nil, err
			}
		}
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out, nil
}

// optionValue refuses values that make an argument begin with '-' where
// the program reads options.
func optionValue(refs []*Ref, l optionLead, val func(i int) string) error {
	var w strings.Builder
	for _, i := range l.refs {
		w.WriteString(val(i))
		if w.Len() > 0 {
			break
		}
	}
	if strings.HasPrefix(w.String(), "-") {
		r := refs[l.refs[0]]
		return fmt.Errorf("${%s} is %q, which begins with '-' where %s reads options, so it would be an option, not a value: write -- before it in the command (%s -- ${%s}; git takes --end-of-options), or text before it (./${%s})", r.Src, FirstLine(w.String()), l.prog, l.prog, r.Src, r.Src)
	}
	return nil
}

// EvalArgs is the step's arguments in sc. For a tool that runs shell
// code (p, from its _meta), the references of its command become the
// command's positional parameters, given in p.Args, and argv's elements
// are checked as arguments; unsafe (the step's unsafe_shell) skips the
// checks that refuse a value.
func (t *Template) EvalArgs(sc *Scope, p node.ShellParams, unsafe bool) (any, error) {
	if t == nil {
		return nil, nil
	}
	m, ok := t.v.(map[string]any)
	if !ok || p.Command == "" && p.Argv == "" {
		return evalValue(t.v, sc)
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		x, err := evalValue(e, sc)
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	if v, has := m[p.Args]; has && p.Args != "" && hasRefs(v) {
		return nil, fmt.Errorf("%s holds references: write each in the shell command where it is used", p.Args)
	}
	if ts, isT := m[p.Command].(*tstring); isT && p.Command != "" {
		c := ts.shellCommand()
		for _, pr := range c.problems {
			if pr.placement || !unsafe {
				return nil, fmt.Errorf("${%s} in the shell command: %s", ts.refs[pr.ref].Src, pr.msg)
			}
		}
		if p.Args == "" {
			return nil, errors.New("the tool takes no values beside its shell command, so a reference cannot reach it")
		}
		vals, err := ts.shellValues(c, sc, unsafe)
		if err != nil {
			return nil, err
		}
		out[p.Command], out[p.Args] = c.text, vals
	}
	if list, isList := m[p.Argv].([]any); isList && p.Argv != "" && !unsafe {
		if err := argvValues(list, sc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// refIn is where ts.refs[i] is written in the graph's source, the string
// ts being written at str; false when it cannot be found as written (an
// escape in a quoted string spells it otherwise).
func (d *Def) refIn(str Pos, ts *tstring, i int) (Pos, bool) {
	if str.Line < 1 {
		return Pos{}, false
	}
	// The string's first byte.
	off := 0
	for line := 1; line < str.Line; line++ {
		nl := strings.IndexByte(d.src[off:], '\n')
		if nl < 0 {
			return Pos{}, false
		}
		off += nl + 1
	}
	for col := 1; col < str.Col && off < len(d.src); col++ {
		_, size := utf8.DecodeRuneInString(d.src[off:])
		off += size
	}
	// The same reference may come earlier in the string; $${ is no
	// reference.
	want := "${" + ts.refs[i].Src + "}"
	nth := 0
	for k := 0; k < i; k++ {
		if ts.refs[k].Src == ts.refs[i].Src {
			nth++
		}
	}
	for {
		k := strings.Index(d.src[off:], want)
		if k < 0 {
			return Pos{}, false
		}
		off += k
		if off > 0 && d.src[off-1] == '$' {
			off += len(want)
			continue
		}
		if nth == 0 {
			break
		}
		nth--
		off += len(want)
	}
	line := 1 + strings.Count(d.src[:off], "\n")
	start := strings.LastIndexByte(d.src[:off], '\n') + 1
	return Pos{line, utf8.RuneCountInString(d.src[start:off]) + 1}, true
}

// hasRefs reports whether a compiled value holds a reference.
func hasRefs(v any) bool {
	switch v := v.(type) {
	case *tstring:
		return true
	case []any:
		for _, e := range v {
			if hasRefs(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if hasRefs(e) {
				return true
			}
		}
	}
	return false
}

// argvValues checks, at run time, the references that begin an argument
// of an argv before any "--".
func argvValues(list []any, sc *Scope) error {
	prog := ""
	if len(list) > 0 {
		prog, _ = list[0].(string)
	}
	for _, l := range argvLeads(list) {
		ts := list[l.word].(*tstring)
		lead := optionLead{refs: l.refs, prog: prog}
		var ferr error
		err := optionValue(ts.refs, lead, func(i int) string {
			x, err := sc.resolve(ts.refs[i])
			if err != nil {
				ferr = err
			}
			return Text(x)
		})
		if ferr != nil {
			return ferr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type argvLead struct {
	word int
	refs []int
}

// argvLeads are the argv elements after the program that begin with
// references, before any "--" (or git's "--end-of-options").
func argvLeads(list []any) []argvLead {
	var out []argvLead
	for k := 1; k < len(list); k++ {
		switch e := list[k].(type) {
		case string:
			if endOfOptions(e) {
				return out
			}
		case *tstring:
			var refs []int
			for i := range e.refs {
				if e.lits[i] != "" {
					break
				}
				refs = append(refs, i)
			}
			if len(refs) > 0 {
				out = append(out, argvLead{k, refs})
			}
		}
	}
	return out
}

func endOfOptions(s string) bool { return s == "--" || s == "--end-of-options" }

// argvWords are an argv's elements as words of a command.
func argvWords(list []any) []cmdWord {
	ws := make([]cmdWord, len(list))
	n := 0
	for k, e := range list {
		switch e := e.(type) {
		case *tstring:
			ws[k].prefix = e.lits[0]
			for i := range e.refs {
				ws[k].c.refs = append(ws[k].c.refs, n+i)
			}
			n += len(e.refs)
		default:
			ws[k].lit, ws[k].isLit, ws[k].prefix = Text(e), true, Text(e)
		}
	}
	return ws
}

// shellCheck finds, in the steps' shell commands and argvs, references
// placed where a value could run as code (bad), and warns at each step
// that opts out with unsafe_shell.
func shellCheck(d *Def, tools map[string]*mcp.Tool) (bad, warn Errors) {
	for _, s := range d.Steps {
		t, ok := tools[s.Call]
		if !ok || s.Args == nil {
			continue
		}
		p := node.ShellParamsOf(t.Meta)
		args, _ := s.Args.v.(map[string]any)
		if args == nil {
			continue
		}
		fail := func(at Pos, format string, a ...any) {
			bad = append(bad, &Error{Pos: at, Msg: fmt.Sprintf("step %s: ", s.ID) + fmt.Sprintf(format, a...)})
		}
		if v, has := args[p.Args]; has && p.Args != "" && hasRefs(v) {
			fail(s.argsPos, "%s of %s holds references: write each in the command where it is used (wc -l ${inputs.file}), and nerve passes it as a variable, checked for where it stands", p.Args, s.Call)
		}
		if ts, isT := args[p.Command].(*tstring); isT && p.Command != "" {
			c := ts.shellCommand()
			switch {
			case p.Args == "":
				fail(s.Args.at(ts.refs[0]), "${%s} in the command of %s: the tool takes no values beside its command, so a reference cannot reach it", ts.refs[0].Src, s.Call)
			case args[p.Args] != nil:
				fail(s.argsPos, "%s of %s holds the values of the command's references, set by nerve; remove it or the references", p.Args, s.Call)
			}
			for _, pr := range c.problems {
				if pr.placement || !s.UnsafeShell {
					r := ts.refs[pr.ref]
					if at, ok := d.refIn(s.Args.at(r), ts, pr.ref); ok {
						fail(at, "${%s} in the command of %s: %s", r.Src, s.Call, pr.msg)
						continue
					}
					at := c.at[pr.ref]
					fail(s.Args.at(r), "${%s} at line %d, column %d of the command of %s: %s", r.Src, at.line, at.col, s.Call, pr.msg)
				}
			}
		}
		if v, has := args[p.Argv]; has && p.Argv != "" {
			list, isList := v.([]any)
			switch {
			case !isList:
				fail(s.argsPos, "%s of %s must be a list written in the graph, the program first: [git, log, \"${inputs.x}\"]", p.Argv, s.Call)
			case len(list) == 0:
				fail(s.argsPos, "%s of %s is empty: give the program and its arguments", p.Argv, s.Call)
			case !s.UnsafeShell:
				var refs []*Ref
				for _, e := range list {
					if ts, isT := e.(*tstring); isT {
						refs = append(refs, ts.refs...)
					}
				}
				a := &shellAnalysis{c: &shellCommand{}, tainted: map[string]bool{}}
				a.command(argvWords(list))
				for _, pr := range a.c.problems {
					fail(s.Args.at(refs[pr.ref]), "${%s} in the %s of %s: %s", refs[pr.ref].Src, p.Argv, s.Call, pr.msg)
				}
			}
		}
		if s.UnsafeShell && (p.Command != "" || p.Argv != "") {
			warn = append(warn, &Error{Pos: s.Pos, Msg: fmt.Sprintf("step %s: unsafe_shell: nerve does not refuse its values where they can run as code in %s: whoever calls the graph may run commands through it; drop unsafe_shell unless that is meant", s.ID, s.Call)})
		}
	}
	sortErrors(bad)
	sortErrors(warn)
	return bad, warn
}

// ShellWarnings names the steps that opt out of the shell's checks
// (unsafe_shell): `nerve graph add` prints them.
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
