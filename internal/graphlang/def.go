// Package graphlang is the language of the graph node kind: a graph's
// definition in YAML or JSON (docs/graphs.md), read with line:column
// positions so a person is told where a mistake is (Parse); its ${...}
// references and templates and their evaluation against a run's values
// (Scope); `when:` conditions (Expr); script steps (script.go: their
// scripts compiled by internal/codemode); the checks run when a graph is
// added or replaced (Check: calls against the session's tools, cycles
// through other graphs, the shell commands of shell.go, the scripts); and
// AddStep, the REPL's graph builder. It runs nothing: the runtime is
// internal/nodes/graph, and internal/graphdraw draws a definition. It
// imports pkg/node, internal/codemode and the MCP vocabulary, never the
// session or another kind.
package graphlang

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultMaxParallel bounds the steps (and foreach items) in flight.
const DefaultMaxParallel = 8

// MaxSourceSize bounds a graph's definition: it bounds every template and
// condition in it, and what parsing one may cost (issue 21).
const MaxSourceSize = 1 << 20

// Pos is a place in a graph file.
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is a mistake in a graph file, with where it is.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// Errors is every mistake found in a graph file.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Input is one input of a graph: a property of the run tool's schema.
type Input struct {
	Name        string
	Type        string
	Description string
	Default     any
	HasDefault  bool
	Required    bool
	Pos         Pos
}

// Retry says how often a failed step is tried again.
type Retry struct {
	Attempts int           // tries in all, ≥ 1
	Backoff  time.Duration // wait before the second try; doubled after each
}

// On-error policies.
const (
	OnErrorFail     = "fail"     // the run fails (default)
	OnErrorSkip     = "skip"     // the step's result is its default value
	OnErrorContinue = "continue" // the failed result stands; dependants run
)

// Step is one call in a graph.
type Step struct {
	ID          string
	Call        string // "node.tool"; empty for an ask step
	Args        *Template
	After       []string
	When        *Expr
	Foreach     *Template
	MaxParallel int
	Timeout     time.Duration
	Retry       Retry
	OnError     string
	Default     any
	HasDefault  bool
	Ask         *Template // the question of a human gate
	// URL, with Ask, is a page the person is asked to open (a URL-mode
	// elicitation, MCP 2025-11-25): the gate passes when they are done
	// there (docs/graphs.md, "Human gates").
	URL *Template
	// Script is a code-mode script (Starlark, internal/codemode) the
	// step runs instead of a call: it reads inputs, the results of the
	// steps it names (steps["read"]) and, under foreach, item as data.
	Script string
	// UnsafeShell lets the step's values reach its shell command or argv
	// where they can run as code (docs/graphs.md, "Values and the shell").
	UnsafeShell bool
	Pos         Pos
	// Deps are the steps this one waits for: references and After.
	Deps []string

	// CallPos is where the step's call is written (its script, for a
	// script step).
	CallPos Pos
	argsPos Pos
	// script places the script's lines in the graph's source.
	script scriptPlace
}

// Def is a parsed graph.
type Def struct {
	Description string
	Inputs      []*Input
	Steps       []*Step
	Output      *Template
	MaxParallel int
	byID        map[string]*Step
	src         string // as written, to place a mistake inside a string
}

// Step returns the step called id, or nil.
func (d *Def) Step(id string) *Step { return d.byID[id] }

// Parse reads a graph in YAML (JSON is YAML too) and checks everything that
// can be checked without the session: names, references, policies, cycles.
// A mistake is an Errors value with line:column positions.
func Parse(src []byte) (*Def, error) {
	d, err := ParseAll(src)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ParseAll is Parse that also returns what it could read of a graph with
// mistakes (nil only when the YAML itself cannot be read), so that its
// calls can be checked too and every mistake reported at once.
func ParseAll(src []byte) (*Def, error) {
	if len(src) > MaxSourceSize {
		return nil, Errors{{Msg: fmt.Sprintf("the graph is over %d bytes (1 MiB, the limit): split it into graphs that call each other", MaxSourceSize)}}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		return nil, Errors{yamlError(src, err)}
	}
	if len(doc.Content) == 0 {
		return nil, Errors{{Msg: "the graph is empty: it needs at least `steps:`"}}
	}
	p := &parser{src: src}
	d := p.def(doc.Content[0])
	d.src = string(src)
	p.link(d)
	if len(p.errs) > 0 {
		sortErrors(p.errs)
		return d, p.errs
	}
	return d, nil
}

type parser struct {
	src  []byte
	errs Errors
}

func pos(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	var at Pos
	if n != nil {
		at = pos(n)
	}
	p.errs = append(p.errs, &Error{Pos: at, Msg: fmt.Sprintf(format, args...)})
}

// pairs returns a mapping's key/value nodes, reporting anything else.
func (p *parser) pairs(n *yaml.Node, what string) [][2]*yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping (key: value)", what)
		return nil
	}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

func (p *parser) value(n *yaml.Node) any {
	var v any
	if err := n.Decode(&v); err != nil {
		p.errorf(n, "%v", err)
		return nil
	}
	return Normalize(v)
}

func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s must be a string", what)
		return "", false
	}
	return n.Value, true
}

func (p *parser) int(n *yaml.Node, what string) int {
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || v < 1 {
		p.errorf(n, "%s must be a whole number ≥ 1", what)
		return 0
	}
	return v
}

func (p *parser) duration(n *yaml.Node, what string) time.Duration {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!int" || n.Tag == "!!float" {
			var secs float64
			if n.Decode(&secs) == nil && secs >= 0 {
				return time.Duration(secs * float64(time.Second))
			}
		} else if d, err := time.ParseDuration(n.Value); err == nil && d >= 0 {
			return d
		}
	}
	p.errorf(n, "%s must be a duration like 30s or 5m (or a number of seconds)", what)
	return 0
}

func (p *parser) unknown(k *yaml.Node, what string, known []string) {
	msg := fmt.Sprintf("unknown field %q in %s (known: %s)", k.Value, what, strings.Join(known, ", "))
	if c := closest(k.Value, known); c != "" {
		msg = fmt.Sprintf("unknown field %q in %s; did you mean %q?", k.Value, what, c)
	}
	p.errorf(k, "%s", msg)
}

var (
	graphFields = []string{"description", "inputs", "steps", "output", "max_parallel"}
	inputFields = []string{"type", "description", "default", "required"}
	stepFields  = []string{"call", "args", "after", "when", "foreach", "max_parallel", "timeout", "retry", "on_error", "default", "ask", "url", "script", "description", "unsafe_shell"}
	retryFields = []string{"attempts", "backoff"}
	inputTypes  = []string{"string", "number", "integer", "boolean", "object", "array"}
)

func (p *parser) def(root *yaml.Node) *Def {
	d := &Def{MaxParallel: DefaultMaxParallel, byID: map[string]*Step{}}
	var steps *yaml.Node
	for _, kv := range p.pairs(root, "the graph") {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "description":
			d.Description, _ = p.str(v, "description")
		case "inputs":
			d.Inputs = p.inputs(v)
		case "steps":
			steps = k
			d.Steps = p.steps(v, d)
		case "output":
			d.Output = p.template(v, false)
		case "max_parallel":
			d.MaxParallel = p.int(v, "max_parallel")
		default:
			p.unknown(k, "the graph", graphFields)
		}
	}
	if steps == nil && len(p.errs) == 0 {
		p.errorf(root, "the graph has no `steps:`; add at least one step, e.g. `steps: {hello: {call: echo.identity, args: {text: hi}}}`")
	}
	return d
}

func (p *parser) inputs(n *yaml.Node) []*Input {
	var out []*Input
	for _, kv := range p.pairs(n, "inputs") {
		k, v := kv[0], kv[1]
		in := &Input{Name: k.Value, Type: "string", Required: true, Pos: pos(k)}
		if !namePattern(k.Value) {
			p.errorf(k, "input name %q: use letters, digits and '_'", k.Value)
		}
		if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
			// `file: string` is short for `file: {type: string}`.
			in.Type = v.Value
		} else if v.Tag != "!!null" {
			for _, f := range p.pairs(v, "input "+k.Value) {
				switch f[0].Value {
				case "type":
					in.Type, _ = p.str(f[1], "type")
				case "description":
					in.Description, _ = p.str(f[1], "description")
				case "default":
					in.Default, in.HasDefault = p.value(f[1]), true
					in.Required = false
				case "required":
					if f[1].Decode(&in.Required) != nil {
						p.errorf(f[1], "required must be true or false")
					}
				default:
					p.unknown(f[0], "input "+k.Value, inputFields)
				}
			}
		}
		if !slices.Contains(inputTypes, in.Type) {
			p.errorf(v, "input %s: type %q is not one of %s", k.Value, in.Type, strings.Join(inputTypes, ", "))
		}
		out = append(out, in)
	}
	return out
}

func (p *parser) steps(n *yaml.Node, d *Def) []*Step {
	var out []*Step
	for _, kv := range p.pairs(n, "steps") {
		k, v := kv[0], kv[1]
		s := &Step{ID: k.Value, Pos: pos(k), OnError: OnErrorFail, Retry: Retry{Attempts: 1}}
		if !namePattern(s.ID) {
			p.errorf(k, "step name %q: use letters, digits and '_'", s.ID)
		}
		if d.byID[s.ID] != nil {
			p.errorf(k, "step %q is defined twice (first at %s)", s.ID, d.byID[s.ID].Pos)
		}
		d.byID[s.ID] = s
		p.step(s, v)
		out = append(out, s)
	}
	if len(out) == 0 && n.Kind == yaml.MappingNode {
		p.errorf(n, "`steps:` is empty; add at least one step")
	}
	return out
}

func (p *parser) step(s *Step, n *yaml.Node) {
	what := "step " + s.ID
	for _, kv := range p.pairs(n, what) {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "call":
			s.Call, _ = p.str(v, what+": call")
			s.CallPos = pos(v)
			if s.Call != "" && !strings.Contains(s.Call, ".") {
				p.errorf(v, "%s: call %q must name a tool as node.tool (e.g. fs.read_text_file)", what, s.Call)
			}
		case "args":
			s.Args = p.template(v, false)
			s.argsPos = pos(v)
			if v.Kind != yaml.MappingNode {
				p.errorf(v, "%s: args must be a mapping of argument names to values", what)
			}
		case "after":
			if v.Kind == yaml.ScalarNode {
				s.After = append(s.After, v.Value)
			} else if v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					if id, ok := p.str(e, what+": after"); ok {
						s.After = append(s.After, id)
					}
				}
			} else {
				p.errorf(v, "%s: after must be a step name or a list of them", what)
			}
		case "when":
			src, ok := p.str(v, what+": when")
			if ok {
				e, err := ParseExpr(src)
				if err != nil {
					p.errorf(v, "%s: when: %v", what, err)
				}
				s.When = e
			}
		case "foreach":
			s.Foreach = p.template(v, false)
		case "max_parallel":
			s.MaxParallel = p.int(v, what+": max_parallel")
		case "timeout":
			s.Timeout = p.duration(v, what+": timeout")
		case "retry":
			for _, f := range p.pairs(v, what+": retry") {
				switch f[0].Value {
				case "attempts":
					s.Retry.Attempts = p.int(f[1], what+": retry attempts")
				case "backoff":
					s.Retry.Backoff = p.duration(f[1], what+": retry backoff")
				default:
					p.unknown(f[0], what+": retry", retryFields)
				}
			}
		case "on_error":
			s.OnError, _ = p.str(v, what+": on_error")
			if !slices.Contains([]string{OnErrorFail, OnErrorSkip, OnErrorContinue}, s.OnError) {
				p.errorf(v, "%s: on_error must be fail, skip or continue (got %q)", what, s.OnError)
			}
		case "default":
			s.Default, s.HasDefault = p.value(v), true
		case "ask":
			s.Ask = p.template(v, true)
		case "url":
			s.URL = p.template(v, true)
		case "script":
			s.Script, _ = p.str(v, what+": script")
			s.CallPos = pos(v)
			s.script = p.placeScript(v)
		case "unsafe_shell":
			if v.Decode(&s.UnsafeShell) != nil {
				p.errorf(v, "%s: unsafe_shell must be true or false", what)
			}
		case "description":
		default:
			p.unknown(k, what, stepFields)
		}
	}
	does := 0
	for _, b := range []bool{s.Call != "", s.Ask != nil, s.Script != ""} {
		if b {
			does++
		}
	}
	switch {
	case does == 0 && n.Kind == yaml.MappingNode:
		p.errorf(n, "%s needs `call: node.tool` (or `ask:` for a question to the person, or `script:` for a script)", what)
	case does > 1:
		p.errorf(n, "%s has more than one of `call:`, `ask:` and `script:`; a step does one of them", what)
	case s.Ask != nil && s.Args != nil:
		p.errorf(n, "%s: an `ask:` step takes no args", what)
	case s.URL != nil && s.Ask == nil:
		p.errorf(n, "%s: `url:` is the page an `ask:` step asks the person to open; add `ask:` with what to do there", what)
	case s.Script != "" && s.Args != nil:
		p.errorf(n, "%s: a `script:` step takes no args: its script reads inputs[\"K\"] and steps[\"ID\"] itself", what)
	case s.Script != "" && s.UnsafeShell:
		p.errorf(n, "%s: unsafe_shell is for a call's arguments; a script passes its values to tools as data", what)
	}
}

func (p *parser) template(n *yaml.Node, wantString bool) *Template {
	if wantString && (n.Kind != yaml.ScalarNode || n.Tag == "!!null") {
		p.errorf(n, "must be a string")
		return nil
	}
	t, err := compileTemplate(p.value(n))
	if err != nil {
		p.errorf(n, "%v", err)
		return nil
	}
	t.pos = pos(n)
	t.refPos = map[string]Pos{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
			if ts, err := compileString(n.Value); err == nil && ts != nil {
				for _, r := range ts.refs {
					if _, ok := t.refPos[r.Src]; !ok {
						t.refPos[r.Src] = pos(n)
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return t
}

// link checks references and dependencies and rejects cycles.
func (p *parser) link(d *Def) {
	inputs := map[string]bool{}
	for _, in := range d.Inputs {
		inputs[in.Name] = true
	}
	stepIDs := make([]string, len(d.Steps))
	for i, s := range d.Steps {
		stepIDs[i] = s.ID
	}
	check := func(t *Template, s *Step, item bool, seen map[string]bool) {
		if t == nil {
			return
		}
		for _, r := range t.refs {
			p.checkRef(r, t.at(r), d, inputs, stepIDs, s, item, seen)
		}
	}
	for _, s := range d.Steps {
		seen := map[string]bool{}
		check(s.Foreach, s, false, seen)
		check(s.Args, s, s.Foreach != nil, seen)
		check(s.Ask, s, s.Foreach != nil, seen)
		check(s.URL, s, s.Foreach != nil, seen)
		if s.Script != "" {
			p.scriptReads(d, s, inputs, stepIDs, seen)
		}
		if s.When != nil {
			for _, r := range s.When.refs {
				p.checkRef(r, s.Pos, d, inputs, stepIDs, s, s.Foreach != nil, seen)
			}
		}
		for _, a := range s.After {
			if d.byID[a] == nil {
				p.errorf(nil, "%s: step %s: after %q: %s", s.Pos, s.ID, a, noSuch("step", a, stepIDs))
				continue
			}
			seen[a] = true
		}
		for _, id := range stepIDs { // file order: deterministic
			if seen[id] {
				s.Deps = append(s.Deps, id)
			}
		}
	}
	if d.Output != nil {
		for _, r := range d.Output.refs {
			p.checkRef(r, d.Output.at(r), d, inputs, stepIDs, nil, false, map[string]bool{})
		}
	}
	if len(p.errs) == 0 { // a cycle through a broken reference means little
		if c := findCycle(d); c != nil {
			p.errorf(nil, "%s: the steps form a cycle: %s; a step cannot depend on itself through others", d.byID[c[0]].Pos, strings.Join(c, " → "))
		}
	}
}

func (p *parser) checkRef(r *Ref, at Pos, d *Def, inputs map[string]bool, stepIDs []string, s *Step, item bool, seen map[string]bool) {
	fail := func(msg string) {
		p.errs = append(p.errs, &Error{Pos: at, Msg: fmt.Sprintf("${%s}: %s", r.Src, msg)})
	}
	switch r.Root {
	case "inputs":
		if !inputs[r.Name] {
			names := make([]string, 0, len(inputs))
			for _, in := range d.Inputs {
				names = append(names, in.Name)
			}
			fail(noSuch("input", r.Name, names) + "; declare it under `inputs:`")
		}
	case "steps":
		if d.byID[r.Name] == nil {
			fail(noSuch("step", r.Name, stepIDs))
			return
		}
		if s != nil && r.Name == s.ID {
			fail("a step cannot use its own result")
			return
		}
		seen[r.Name] = true
	case "item":
		if !item {
			fail("${item} is only known inside a step with `foreach:`")
		}
	}
}

func noSuch(what, name string, known []string) string {
	if c := closest(name, known); c != "" {
		return fmt.Sprintf("no %s %q; did you mean %q?", what, name, c)
	}
	if len(known) == 0 {
		return fmt.Sprintf("no %s %q (there are none)", what, name)
	}
	return fmt.Sprintf("no %s %q (known: %s)", what, name, strings.Join(known, ", "))
}

// findCycle returns a cycle of step ids (first == last), or nil.
func findCycle(d *Def) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		color[id] = grey
		stack = append(stack, id)
		for _, dep := range d.byID[id].Deps {
			switch color[dep] {
			case grey:
				i := slices.Index(stack, dep)
				c := append(slices.Clone(stack[i:]), dep)
				slices.Reverse(c) // dependency order: a → b means b waits for a
				return c
			case white:
				if c := visit(dep); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil
	}
	for _, s := range d.Steps {
		if color[s.ID] == white {
			if c := visit(s.ID); c != nil {
				return c
			}
		}
	}
	return nil
}

func namePattern(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || (i > 0 && (r >= '0' && r <= '9' || r == '-'))
		if !ok {
			return false
		}
	}
	return true
}
