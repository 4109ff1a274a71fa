package graphlang

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nerve-dev/nerve/internal/suggest"
)

func closest(name string, known []string) string { return suggest.Closest(name, known) }

// Ref is one ${...} reference: inputs.K, steps.ID.text,
// steps.ID.structured.a.b[0], steps.ID.is_error, item, item.a.
type Ref struct {
	Src  string
	Root string // "inputs", "steps" or "item"
	Name string // the input or step; "" for item
	// Field is what of a step's result: "text", "structured" or "is_error".
	Field string
	Path  []any // string keys and int indexes below the value
}

var stepFields3 = []string{"text", "structured", "is_error", "texts"}

// parseRef parses the inside of ${...}.
func parseRef(src string) (*Ref, error) {
	r := &Ref{Src: src}
	body := strings.TrimSpace(src)
	if f, _, ok := strings.Cut(body, " "); ok && (f == "raw" || f == "shell") {
		// The quoting filters of old: a value now reaches a shell only as
		// a variable (docs/graphs.md, "Values and the shell").
		return nil, fmt.Errorf("${%s}: %s is gone: a reference in a shell command reaches it as a variable, whatever it holds; write ${%s}, and set unsafe_shell: true on the step only if its callers may run commands through it", src, f, strings.TrimSpace(strings.TrimPrefix(body, f)))
	}
	segs, err := splitPath(body)
	if err != nil {
		return nil, err
	}
	root, _ := segs[0].(string)
	segs = segs[1:]
	name := func() (string, error) {
		if len(segs) == 0 {
			return "", fmt.Errorf("${%s}: %s needs a name: ${%s.NAME}", src, root, root)
		}
		s, ok := segs[0].(string)
		if !ok {
			return "", fmt.Errorf("${%s}: %s needs a name, not an index", src, root)
		}
		segs = segs[1:]
		return s, nil
	}
	switch root {
	case "inputs":
		r.Root = root
		if r.Name, err = name(); err != nil {
			return nil, err
		}
	case "steps":
		r.Root = root
		if r.Name, err = name(); err != nil {
			return nil, err
		}
		f, err := name()
		if err != nil {
			return nil, fmt.Errorf("${%s}: say which part of the result: ${steps.%s.text}, ${steps.%s.structured...} or ${steps.%s.is_error}", src, r.Name, r.Name, r.Name)
		}
		switch f {
		case "text", "structured", "is_error", "texts":
			r.Field = f
		default:
			hint := ""
			if c := closest(f, stepFields3); c != "" {
				hint = fmt.Sprintf("; did you mean %q?", c)
			}
			return nil, fmt.Errorf("${%s}: a step's result has text, structured and is_error, not %q%s", src, f, hint)
		}
		if f != "structured" && len(segs) > 0 {
			return nil, fmt.Errorf("${%s}: only structured has parts below it", src)
		}
	case "item":
		r.Root = root
	default:
		return nil, fmt.Errorf("${%s}: a reference starts with inputs., steps. or item", src)
	}
	r.Path = segs
	return r, nil
}

// splitPath splits a.b[0].c into ["a","b",0,"c"].
func splitPath(s string) ([]any, error) {
	var out []any
	i := 0
	for i < len(s) {
		switch {
		case s[i] == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("${%s}: '[' without ']'", s)
			}
			n, err := strconv.Atoi(s[i+1 : i+j])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("${%s}: [%s] must be an index ≥ 0", s, s[i+1:i+j])
			}
			out = append(out, n)
			i += j + 1
		case s[i] == '.' && len(out) > 0:
			i++
			if i >= len(s) || s[i] == '.' || s[i] == '[' {
				return nil, fmt.Errorf("${%s}: a name is missing after '.'", s)
			}
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("${%s}: a name is missing", s)
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("${}: empty reference")
	}
	if _, ok := out[0].(string); !ok {
		return nil, fmt.Errorf("${%s}: a reference starts with a name", s)
	}
	return out, nil
}

// Template is a JSON-like value whose strings may hold ${...} references.
type Template struct {
	v    any // the value with every string compiled
	refs []*Ref
	pos  Pos
	// refPos is where each reference is written.
	refPos map[string]Pos
}

// at is where r is written.
func (t *Template) at(r *Ref) Pos {
	if p, ok := t.refPos[r.Src]; ok {
		return p
	}
	return t.pos
}

// tstring is a string with references: parts alternate literal text and
// references; whole is set when the string is exactly one reference (its
// value keeps its JSON type).
type tstring struct {
	lits  []string // len(refs)+1
	refs  []*Ref
	whole bool

	// shellCmd is the string compiled as a shell command, once it is
	// placed into one (shell.go).
	shellOnce sync.Once
	shellCmd  *shellCommand
}

// Refs returns the template's references.
func (t *Template) Refs() []*Ref {
	if t == nil {
		return nil
	}
	return t.refs
}

// MaxTemplateDepth bounds how deeply the lists and objects of a template
// (args, output, foreach) nest: compiling and evaluating recurse once per
// level (issue 21).
const MaxTemplateDepth = 64

func compileTemplate(v any) (*Template, error) {
	t := &Template{}
	var err error
	t.v, err = t.compile(v, 0)
	return t, err
}

func (t *Template) compile(v any, depth int) (any, error) {
	if depth > MaxTemplateDepth {
		return nil, fmt.Errorf("the value nests lists and objects more than %d deep (the limit): flatten it, or pass it as an input", MaxTemplateDepth)
	}
	switch v := v.(type) {
	case string:
		ts, err := compileString(v)
		if err != nil {
			return v, err
		}
		if ts == nil {
			// No reference: only $${ escapes to undo (docs/graphs.md).
			return strings.ReplaceAll(v, "$${", "${"), nil
		}
		t.refs = append(t.refs, ts.refs...)
		return ts, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := t.compile(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := t.compile(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// compileString returns nil for a string without references. "$${" is a
// literal "${".
func compileString(s string) (*tstring, error) {
	if !strings.Contains(s, "${") {
		return nil, nil
	}
	ts := &tstring{}
	var lit strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			lit.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			lit.WriteByte(s[i])
			i++
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%q: ${ without a closing }", clipText(s))
		}
		r, err := parseRef(s[i+2 : i+j])
		if err != nil {
			return nil, err
		}
		ts.lits = append(ts.lits, lit.String())
		lit.Reset()
		ts.refs = append(ts.refs, r)
		i += j + 1
	}
	ts.lits = append(ts.lits, lit.String())
	if len(ts.refs) == 0 {
		return nil, nil
	}
	ts.whole = len(ts.refs) == 1 && ts.lits[0] == "" && ts.lits[1] == ""
	if !ts.whole && len(ts.refs) == 0 {
		return nil, nil
	}
	return ts, nil
}

// Dynamic reports whether the template holds any reference.
func (t *Template) Dynamic() bool { return t != nil && len(t.refs) > 0 }

// StepResult is what later steps see of a step: ${steps.ID.text},
// ${steps.ID.structured...}, ${steps.ID.is_error}.
type StepResult struct {
	Text       string `json:"text"`
	Structured any    `json:"structured,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// Texts is a foreach step's items' texts, one per item in order
	// (${steps.ID.texts}); nil for other steps.
	Texts []any `json:"texts,omitempty"`
}

// Scope is what references resolve against: a run's inputs, the results
// of its steps so far and, in a foreach step, the current item.
type Scope struct {
	Inputs map[string]any
	// Results returns a step's result; nil for a step not run (skipped by
	// when).
	Results func(id string) *StepResult
	Item    any
	HasItem bool
}

// resolve returns a reference's value (JSON-typed: string, float64, bool,
// nil, map[string]any, []any).
func (sc *Scope) resolve(r *Ref) (any, error) {
	var v any
	switch r.Root {
	case "inputs":
		v = sc.Inputs[r.Name]
	case "item":
		if !sc.HasItem {
			return nil, fmt.Errorf("${%s}: no foreach item here", r.Src)
		}
		v = sc.Item
	case "steps":
		res := sc.Results(r.Name)
		if res == nil {
			return nil, nil // a step skipped by `when:` has no result
		}
		switch r.Field {
		case "text":
			// One trailing newline goes, as $(…) drops it: `echo hi`
			// gives "hi" (docs/graphs.md); the record keeps it.
			return strings.TrimSuffix(res.Text, "\n"), nil
		case "texts":
			return res.Texts, nil
		case "is_error":
			return res.IsError, nil
		}
		v = res.Structured
	}
	for _, seg := range r.Path {
		switch k := seg.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("${%s}: %q: the value there is %s, not an object", r.Src, k, TypeName(v))
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("${%s}: [%d]: the value there is %s, not a list", r.Src, k, TypeName(v))
			}
			if k >= len(l) {
				return nil, fmt.Errorf("${%s}: [%d]: the list has %d items", r.Src, k, len(l))
			}
			v = l[k]
		}
	}
	return v, nil
}

func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// eval returns the template's value in sc.
func (t *Template) Eval(sc *Scope) (any, error) {
	if t == nil {
		return nil, nil
	}
	return evalValue(t.v, sc)
}

func evalValue(v any, sc *Scope) (any, error) {
	switch v := v.(type) {
	case *tstring:
		if v.whole {
			return sc.resolve(v.refs[0])
		}
		var b strings.Builder
		for i, r := range v.refs {
			b.WriteString(v.lits[i])
			x, err := sc.resolve(r)
			if err != nil {
				return nil, err
			}
			b.WriteString(Text(x))
		}
		b.WriteString(v.lits[len(v.lits)-1])
		return b.String(), nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := evalValue(e, sc)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := evalValue(e, sc)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return v, nil
}

// Text is a value inside a string: strings as they are, null as nothing,
// everything else as compact JSON.
func Text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Normalize turns YAML-decoded values into JSON-typed ones: every number a
// float64, every map keyed by strings.
func Normalize(v any) any {
	switch v := v.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	case map[string]any:
		for k, e := range v {
			v[k] = Normalize(e)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = Normalize(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = Normalize(e)
		}
		return v
	}
	return v
}

// clipText shortens what a message quotes: a graph may hold a megabyte.
func clipText(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// FirstLine is s trimmed to its first line and at most 300 bytes, for a
// message that quotes it.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 300 {
		n := 300
		for n > 0 && !utf8.RuneStart(s[n]) {
			n-- // never inside a UTF-8 character
		}
		s = s[:n] + " …"
	}
	return s
}
