package graphlang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/pkg/node"
)

// A script step (`script:`) runs a code-mode script (internal/codemode,
// docs/code-mode.md) instead of calling one tool. Its values come to it
// as data, never as source: the globals inputs (the run's inputs),
// steps (the results of the steps it names, steps["read"], each
// {"text", "structured", "is_error", "texts"}) and, in a foreach step,
// item. The steps it names are the steps it waits for, so they must be
// written out as string keys (steps["read"] or steps.get("read")).

// ScriptGlobals are the names a script step's script reads its values by.
var ScriptGlobals = []string{"inputs", "steps", "item"}

// scriptPlace maps a line and column of a step's script to the graph's
// source. A literal block (`script: |`) maps exactly; a one-line scalar
// maps within its line (exactly unless a quoted string holds escapes);
// any other place is the scalar's own.
type scriptPlace struct {
	at      Pos  // where the scalar is written (a block's indicator)
	block   bool // a literal block: line L of the script is at.Line+L
	indent  int  // a block's indentation, in columns
	oneLine bool // the script is one line, written at at (+1 when quoted)
	quoted  bool
	bad     bool // the script does not parse: reported once, by Parse
}

func (p *parser) placeScript(v *yaml.Node) scriptPlace {
	sp := scriptPlace{at: pos(v)}
	switch {
	case v.Style&yaml.LiteralStyle != 0:
		sp.block = true
		lines := strings.Split(string(p.src), "\n")
		for i := v.Line; i < len(lines); i++ { // the lines after the indicator
			if t := strings.TrimLeft(lines[i], " "); t != "" {
				sp.indent = len(lines[i]) - len(t)
				break
			}
		}
	case !strings.Contains(v.Value, "\n") && v.Style&yaml.FoldedStyle == 0:
		sp.oneLine = true
		sp.quoted = v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	}
	return sp
}

// ScriptPos is where line and column of the step's script are in the
// graph's source (the script's own place when they are 0).
func (s *Step) ScriptPos(line, col int) Pos {
	sp := s.script
	switch {
	case line < 1:
		return sp.at
	case sp.block:
		return Pos{sp.at.Line + line, sp.indent + col}
	case sp.oneLine && line == 1:
		c := sp.at.Col + col - 1
		if sp.quoted {
			c++
		}
		return Pos{sp.at.Line, c}
	}
	return sp.at
}

// scriptReads checks a script's syntax and what it reads: each step it
// names exists and is not itself (and becomes a dependency), each input
// is declared, item only under foreach, and steps is read with its keys
// written out.
func (p *parser) scriptReads(d *Def, s *Step, inputs map[string]bool, stepIDs []string, seen map[string]bool) {
	fail := func(line, col int, format string, args ...any) {
		p.errs = append(p.errs, &Error{Pos: s.ScriptPos(line, col), Msg: fmt.Sprintf("step %s: script: ", s.ID) + fmt.Sprintf(format, args...)})
	}
	uses, err := codemode.Reads(s.Script, "steps", "inputs", "item")
	if err != nil {
		s.script.bad = true
		var ce *codemode.Error
		if errors.As(err, &ce) {
			fail(ce.Line, ce.Column, "%s", ce.Msg)
		} else {
			fail(0, 0, "%v", err)
		}
		return
	}
	if o := uses["steps"].Other; o != nil {
		fail(o.Line, o.Column, `read steps with a step's name written out, steps["read"] (or steps.get("read")), so the graph knows which steps this one waits for`)
	}
	for _, r := range uses["steps"].Reads {
		switch {
		case d.byID[r.Key] == nil:
			fail(r.Line, r.Column, "steps[%q]: %s", r.Key, noSuch("step", r.Key, stepIDs))
		case r.Key == s.ID:
			fail(r.Line, r.Column, "steps[%q]: a step cannot use its own result", r.Key)
		default:
			seen[r.Key] = true
		}
	}
	for _, r := range uses["inputs"].Reads {
		if !inputs[r.Key] {
			names := make([]string, 0, len(inputs))
			for _, in := range d.Inputs {
				names = append(names, in.Name)
			}
			fail(r.Line, r.Column, "inputs[%q]: %s; declare it under `inputs:`", r.Key, noSuch("input", r.Key, names))
		}
	}
	item := uses["item"]
	if s.Foreach == nil && (item.Other != nil || len(item.Reads) > 0) {
		at := item.Other
		if at == nil || len(item.Reads) > 0 && item.Reads[0].Line < at.Line {
			at = &item.Reads[0]
		}
		fail(at.Line, at.Column, "item is only known in a step with `foreach:`")
	}
}

// checkScripts compiles each script step's script against the session's
// tools (codemode.Check): a name that is neither a builtin, a global nor
// a node is a mistake at its place in the graph's source. Nodes whose
// tools cannot be listed now (down) are taken as there.
func checkScripts(ctx context.Context, d *Def, self string, tools map[string]*mcp.Tool, down map[string]string) Errors {
	var errs Errors
	var cat *catalogueTools
	for _, s := range d.Steps {
		if s.Script == "" || s.script.bad {
			continue
		}
		if cat == nil {
			cat = newCatalogueTools(tools)
		}
		opts := &codemode.Options{
			Tools:   cat,
			Visible: func(id string, _ *mcp.Tool) bool { return id != self },
			Globals: map[string]any{"inputs": map[string]any{}, "steps": map[string]any{}},
		}
		if s.Foreach != nil {
			opts.Globals["item"] = nil
		}
		for id := range down {
			opts.Assume = append(opts.Assume, id)
		}
		err := codemode.Check(ctx, s.Script, opts)
		var ce *codemode.Error
		if errors.As(err, &ce) {
			errs = append(errs, &Error{Pos: s.ScriptPos(ce.Line, ce.Column), Msg: fmt.Sprintf("step %s: script: %s", s.ID, ce.Msg)})
		} else if err != nil {
			errs = append(errs, &Error{Pos: s.CallPos, Msg: fmt.Sprintf("step %s: script: %v", s.ID, err)})
		}
	}
	return errs
}

// catalogueTools is a session's catalogue as the node.ToolCaller that
// codemode.Check reads the tools of; it calls nothing.
type catalogueTools struct{ ts *node.Toolset }

func newCatalogueTools(tools map[string]*mcp.Tool) *catalogueTools {
	return &catalogueTools{ts: node.ToolsetOf(func(yield func(string, *mcp.Tool) bool) {
		for _, q := range slices.Sorted(maps.Keys(tools)) {
			if id, _, ok := node.SplitQualified(q); ok && !yield(id, tools[q]) {
				return
			}
		}
	})}
}

func (c *catalogueTools) Toolset(context.Context) *node.Toolset { return c.ts }

func (c *catalogueTools) CallTool(context.Context, string, json.RawMessage, func(node.CallEvent)) (*mcp.CallToolResult, error) {
	return nil, errors.New("a graph's check calls no tool")
}
