package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/pkg/node"
)

// script runs a script step's script (internal/codemode): the run's
// inputs, the results of the steps it waits for and its foreach item
// reach it as data (the globals inputs, steps and item), never as
// source. Each of its calls is the session's, made as the script of this
// step (script:graph:G/STEP in the call log). The step's result is the
// script's: its text is the result as text (a string as it is, anything
// else as JSON; what the script printed when it set no result), its
// structured value the result itself. A script that fails fails the step,
// its error placed in the graph's source.
func (r *run) script(ctx context.Context, s *graphlang.Step, sc *graphlang.Scope) (*graphlang.StepResult, error) {
	tools, ok := r.o.Caller.(node.ToolCaller)
	if !ok {
		return nil, errors.New("this session offers no tools to scripts")
	}
	steps := make(map[string]any, len(s.Deps))
	for _, id := range s.Deps {
		res := sc.Results(id)
		if res == nil {
			steps[id] = nil // skipped by when
			continue
		}
		v := map[string]any{"text": strings.TrimSuffix(res.Text, "\n"), "structured": res.Structured, "is_error": res.IsError}
		if res.Texts != nil {
			v["texts"] = res.Texts
		}
		steps[id] = v
	}
	globals := map[string]any{"inputs": sc.Inputs, "steps": steps}
	if sc.HasItem {
		globals["item"] = sc.Item
	}
	opts := &codemode.Options{
		Tools:    tools,
		Visible:  func(id string, _ *mcp.Tool) bool { return id != r.o.Graph },
		Filename: "steps." + s.ID + ".script",
		Globals:  globals,
	}
	if s.Timeout > 0 {
		opts.Limits.Time = s.Timeout
	}
	res, err := codemode.Run(ctx, s.Script, opts)
	if cause := context.Cause(ctx); cause != nil {
		return nil, cause
	}
	if err != nil {
		msg := err.Error()
		var ce *codemode.Error
		if errors.As(err, &ce) {
			msg = ce.Msg
			if ce.Line > 0 {
				msg = fmt.Sprintf("%s (script line %d, %s in the graph)", ce.Msg, ce.Line, s.ScriptPos(ce.Line, ce.Column))
			}
		}
		out := &graphlang.StepResult{Text: "Error: " + msg, IsError: true}
		return out, &stepFailure{msg: "the script failed: " + msg, res: out}
	}
	out := &graphlang.StepResult{Text: res.Printed}
	switch v := res.Value.(type) {
	case nil:
	case string:
		out.Text = v
	default:
		b, err := marshalPlain(v)
		if err != nil {
			return nil, fmt.Errorf("the script's result: %w", err)
		}
		out.Text = string(b)
		// As a tool's structured content reads: JSON numbers as float64.
		var sv any
		if json.Unmarshal(b, &sv) == nil {
			out.Structured = sv
		}
	}
	return out, nil
}
