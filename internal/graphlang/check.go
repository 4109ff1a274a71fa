package graphlang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/argcheck"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the graph node kind's name.
const Kind = "graph"

// ToolName is the graph kind's one tool, whose input schema is the
// graph's inputs (Def.InputSchema).
const ToolName = "run"

// Options are a graph node's Spec.Options: the definition as written, so
// that it persists with the session and exports as the person wrote it.
type Options struct {
	Source string `json:"source"`
}

// CheckCalls checks the graph's calls against a session's tools (qualified
// name → tool): every called tool exists, arguments without references
// match the tool's input schema, and no chain of graphs calls back into
// self. graphs holds the definitions of the session's other graph nodes;
// down the nodes whose tools cannot be listed now, with why: calls of
// their tools are not checked (DownWarnings names them), so a graph can be
// edited while a node it uses is down.
func CheckCalls(d *Def, self string, tools map[string]*mcp.Tool, graphs map[string]*Def, down map[string]string) error {
	var errs Errors
	names := make([]string, 0, len(tools))
	for q := range tools {
		names = append(names, q)
	}
	sort.Strings(names)
	for _, s := range d.Steps {
		if s.Call == "" {
			continue
		}
		nodeID, _, _ := strings.Cut(s.Call, ".")
		t, ok := tools[s.Call]
		if _, isDown := down[nodeID]; !ok && isDown {
			continue
		}
		if !ok && nodeID == self {
			errs = append(errs, &Error{Pos: s.CallPos, Msg: fmt.Sprintf("step %s calls %s: a graph cannot call itself", s.ID, s.Call)})
			continue
		}
		if !ok {
			msg := fmt.Sprintf("step %s calls %s: no such tool", s.ID, s.Call)
			if c := closest(s.Call, names); c != "" {
				msg += fmt.Sprintf("; did you mean %s?", c)
			} else {
				msg += " (list the session's tools with `nerve tools`)"
			}
			errs = append(errs, &Error{Pos: s.CallPos, Msg: msg})
			continue
		}
		argsPos := s.argsPos
		if argsPos.Line == 0 {
			argsPos = s.CallPos // no args: the call is where they are missing
		}
		if err := checkArgs(s, t); err != nil {
			errs = append(errs, &Error{Pos: argsPos, Msg: fmt.Sprintf("step %s: arguments of %s: %v", s.ID, s.Call, err)})
		} else {
			for _, m := range checkDynamicArgs(d, s, t) {
				errs = append(errs, &Error{Pos: argsPos, Msg: fmt.Sprintf("step %s: arguments of %s: %s", s.ID, s.Call, m)})
			}
		}
		if g, ok := graphs[nodeID]; ok {
			if c := graphCycle(self, nodeID, g, graphs, []string{self}); c != nil {
				errs = append(errs, &Error{Pos: s.CallPos, Msg: fmt.Sprintf("step %s calls graph %s, which calls back: %s", s.ID, nodeID, strings.Join(c, " → "))})
			}
		}
	}
	bad, _ := shellCheck(d, tools)
	errs = append(errs, bad...)
	if len(errs) > 0 {
		sortErrors(errs)
		return errs
	}
	return nil
}

// DownWarnings names the steps whose calls could not be checked because
// their node is down.
func DownWarnings(d *Def, down map[string]string) Errors {
	var out Errors
	for _, s := range d.Steps {
		nodeID, _, _ := strings.Cut(s.Call, ".")
		if why, ok := down[nodeID]; ok {
			out = append(out, &Error{Pos: s.CallPos, Msg: fmt.Sprintf("step %s calls %s, not checked: %s", s.ID, s.Call, why)})
		}
	}
	return out
}

// graphCycle follows graph g (called id) and returns the chain of graphs
// back to self, or nil.
func graphCycle(self, id string, g *Def, graphs map[string]*Def, path []string) []string {
	path = append(path, id)
	if id == self {
		return path
	}
	if len(path) > 64 || slices.Contains(path[:len(path)-1], id) {
		return nil // a cycle not through self is that graph's own problem
	}
	for _, s := range g.Steps {
		callee, _, _ := strings.Cut(s.Call, ".")
		if next, ok := graphs[callee]; ok || callee == self {
			if c := graphCycle(self, callee, next, graphs, path); c != nil {
				return c
			}
		}
	}
	return nil
}

// checkArgs validates arguments that hold no reference against the
// tool's schema; with references, it checks only the argument names.
func checkArgs(s *Step, t *mcp.Tool) error {
	if s.Foreach == nil && !s.Args.Dynamic() {
		var v any = map[string]any{}
		if s.Args != nil {
			v = s.Args.v
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return argcheck.Validate(t, b)
	}
	schema, _ := toMap(t.InputSchema)
	props, _ := schema["properties"].(map[string]any)
	args, _ := s.Args.v.(map[string]any)
	if props == nil || schema["additionalProperties"] != false {
		return nil
	}
	known := make([]string, 0, len(props))
	for k := range props {
		known = append(known, k)
	}
	sort.Strings(known)
	for k := range args {
		if _, ok := props[k]; !ok {
			if c := closest(k, known); c != "" {
				return fmt.Errorf("no argument %q; did you mean %q?", k, c)
			}
			return fmt.Errorf("no argument %q (it takes %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// checkDynamicArgs checks arguments that hold references as far as can be
// known before the run: a required argument missing, a key that is not
// the tool's but close to one of its (a misspelling, even where the tool
// allows other keys), and an input placed whole into an argument of
// another type (a string input into a number argument fails only at run
// time otherwise).
func checkDynamicArgs(d *Def, s *Step, t *mcp.Tool) []string {
	if !s.Args.Dynamic() {
		return nil
	}
	schema, _ := toMap(t.InputSchema)
	props, _ := schema["properties"].(map[string]any)
	args, _ := s.Args.v.(map[string]any)
	if props == nil || args == nil {
		return nil
	}
	known := make([]string, 0, len(props))
	for k := range props {
		known = append(known, k)
	}
	sort.Strings(known)
	var out []string
	for _, k := range sortedKeys(args) {
		if _, ok := props[k]; !ok {
			if c := closest(k, known); c != "" && schema["additionalProperties"] != false {
				out = append(out, fmt.Sprintf("no argument %q; did you mean %q?", k, c))
			}
			continue
		}
		ts, ok := args[k].(*tstring)
		if !ok || !ts.whole || ts.refs[0].Root != "inputs" || len(ts.refs[0].Path) > 0 {
			continue
		}
		in := d.input(ts.refs[0].Name)
		p, _ := props[k].(map[string]any)
		if in == nil || p == nil {
			continue
		}
		if want := schemaTypes(p["type"]); len(want) > 0 && !typeFits(in.Type, want) {
			out = append(out, fmt.Sprintf("input %s is %s %s, but argument %q takes %s; declare the input as {type: %s}", in.Name, article(in.Type), in.Type, k, strings.Join(want, " or "), want[0]))
		}
	}
	if s.Foreach == nil {
		req, _ := schema["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := args[name]; !ok && name != "" {
				out = append(out, fmt.Sprintf("missing required argument %q", name))
			}
		}
	}
	return out
}

func (d *Def) input(name string) *Input {
	for _, in := range d.Inputs {
		if in.Name == name {
			return in
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func schemaTypes(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeFits(in string, want []string) bool {
	for _, w := range want {
		if w == in || w == "number" && in == "integer" {
			return true
		}
	}
	return false
}

func article(t string) string {
	if t == "integer" || t == "object" || t == "array" {
		return "an"
	}
	return "a"
}

func toMap(schema any) (map[string]any, bool) {
	if m, ok := schema.(map[string]any); ok {
		return m, true
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil
}

// InputSchema is the run tool's input schema, built from the inputs.
func (d *Def) InputSchema() map[string]any {
	props := map[string]any{}
	var required []any
	for _, in := range d.Inputs {
		p := map[string]any{"type": in.Type}
		if in.Description != "" {
			p["description"] = in.Description
		}
		if in.HasDefault {
			p["default"] = in.Default
		}
		props[in.Name] = p
		if in.Required {
			required = append(required, in.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// Check is the graph kind's node.Check, run by the session before a graph
// is added or replaces one: every mistake of the definition — its format,
// its calls against the session's tools (names, arguments), its shell
// commands (shell.go), cycles through the session's other graphs — in one
// *Mistakes, each at LINE:COLUMN of the source. The warnings name the
// steps that opt out of the shell's checks (unsafe_shell) and calls that
// could not be checked because their node is down (a graph may be edited
// while a node it uses is down), each at LINE:COLUMN too.
func Check(ctx context.Context, spec node.Spec, c *node.Catalogue) ([]string, error) {
	var o Options
	if err := spec.DecodeOptions(&o); err != nil {
		return nil, err
	}
	d, perr := ParseAll([]byte(o.Source))
	if d == nil {
		return nil, &Mistakes{Graph: spec.ID, Err: perr}
	}
	graphs := map[string]*Def{}
	for id, sp := range c.Specs {
		var other Options
		if sp.Kind != Kind || sp.DecodeOptions(&other) != nil {
			continue
		}
		if g, err := Parse([]byte(other.Source)); err == nil {
			graphs[id] = g
		}
	}
	var all, es Errors
	if errors.As(perr, &es) {
		all = append(all, es...)
	}
	if errors.As(CheckCalls(d, spec.ID, c.Tools, graphs, c.Down), &es) {
		all = append(all, es...)
	}
	all = append(all, checkScripts(ctx, d, spec.ID, c.Tools, c.Down)...)
	if len(all) > 0 {
		return nil, &Mistakes{Graph: spec.ID, Err: Sorted(all)}
	}
	var warn []string
	for _, w := range append(ShellWarnings(d, c.Tools), DownWarnings(d, c.Down)...) {
		warn = append(warn, w.Error())
	}
	return warn, nil
}

// Mistakes is a graph definition refused by Check: its message is one
// report, "graph NAME has mistakes:" and then each mistake on a line of
// its own, indented, at LINE:COLUMN where it has a place.
type Mistakes struct {
	Graph string
	Err   error // an Errors, or what the source could not be read for
}

func (m *Mistakes) Error() string {
	return fmt.Sprintf("graph %s has mistakes:\n  %s", m.Graph, strings.ReplaceAll(m.Err.Error(), "\n", "\n  "))
}

func (m *Mistakes) Unwrap() error { return m.Err }
