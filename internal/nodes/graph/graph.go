// Package graph is the graph node kind's runtime: the node, whose one tool
// "run" runs a definition of internal/graphlang with the graph's inputs as
// its input schema; the engine (Run), which calls each step's tool through
// node.Env.Tools (any kind, other graphs included) or runs its script
// (internal/codemode, the run's values given as data), runs independent steps
// in parallel and applies each step's policies (when, foreach, timeout,
// retry, on_error); and the run records and their journal, which make a
// run resumable. Only internal/nodes/all imports it; it reaches other nodes
// through node.Env.Tools, never directly.
package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind name.
const Kind = graphlang.Kind

// Check is the kind's node.Check: the language's checks of a definition
// against the session (graphlang.Check).
var Check = graphlang.Check

// Node is a graph node.
type Node struct {
	node.Base
	env   node.Env
	def   *graphlang.Def
	tools []*mcp.Tool
	runs  *runStore
}

// New is the graph kind's node.Factory. It parses the definition, so a
// graph with mistakes is refused when it is added.
func New(spec node.Spec, env node.Env) (node.Node, error) {
	if len(spec.Command) > 0 {
		return nil, fmt.Errorf("graph node takes no command (got %q); give its definition with `nerve graph add %s --from FILE`", spec.Command, spec.ID)
	}
	var o graphlang.Options
	if err := spec.DecodeOptions(&o); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Source) == "" {
		return nil, fmt.Errorf("graph %q has no definition; add it with `nerve graph add %s --from FILE`", spec.ID, spec.ID)
	}
	d, err := graphlang.Parse([]byte(o.Source))
	if err != nil {
		return nil, fmt.Errorf("graph %q:\n%w", spec.ID, err)
	}
	for _, s := range d.Steps {
		if callee, _, _ := strings.Cut(s.Call, "."); callee == spec.ID {
			return nil, fmt.Errorf("graph %q: %s: step %s calls %s: a graph cannot call itself", spec.ID, s.CallPos, s.ID, s.Call)
		}
	}
	desc := d.Description
	if desc == "" {
		ids := make([]string, len(d.Steps))
		for i, s := range d.Steps {
			ids[i] = s.ID
		}
		desc = fmt.Sprintf("Runs graph %s: steps %s.", spec.ID, strings.Join(ids, ", "))
	}
	n := &Node{env: env, def: d, runs: newRunStore(env.Dir, spec.ID)}
	n.tools = []*mcp.Tool{{Name: graphlang.ToolName, Title: "Run graph " + spec.ID, Description: desc, InputSchema: d.InputSchema()}}
	n.Init(spec, env)
	return n, nil
}

func (n *Node) Start(ctx context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	n.runs.load(n.env.Log())
	return n.Machine.To(node.Ready, "")
}

func (n *Node) Stop(ctx context.Context) error {
	switch n.State() {
	case node.Created, node.Stopped:
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	return n.Machine.To(node.Stopped, "")
}

// Interrupt is the caller's cancellation: runs end with their calls' ctx.
func (n *Node) Interrupt(ctx context.Context) error { return nil }

func (n *Node) ListTools(ctx context.Context) ([]*mcp.Tool, error) { return n.tools, nil }

type stackKey struct{}

// CallTool runs the graph.
func (n *Node) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if req.Tool != graphlang.ToolName {
		return nil, fmt.Errorf("%w %q: graph %q has only %q", node.ErrUnknownTool, req.Tool, n.ID(), graphlang.ToolName)
	}
	// Graphs calling graphs: the chain travels in ctx through the session.
	stack, _ := ctx.Value(stackKey{}).([]string)
	if slices.Contains(stack, n.ID()) {
		return nil, fmt.Errorf("graph cycle: %s → %s; a graph cannot call itself, even through others", strings.Join(stack, " → "), n.ID())
	}
	ctx = context.WithValue(ctx, stackKey{}, append(slices.Clone(stack), n.ID()))

	var inputs map[string]any
	if len(req.Arguments) > 0 {
		if err := json.Unmarshal(req.Arguments, &inputs); err != nil {
			return nil, fmt.Errorf("%w: %v", node.ErrBadArgs, err)
		}
	}
	if n.env.Tools == nil {
		return nil, fmt.Errorf("graph %q: this session offers no tools to call", n.ID())
	}
	var prior map[string]*StepRecord
	resumeID, _ := req.Meta[api.MetaResume].(string)
	if resumeID != "" {
		// One caller at a time resumes a run: the claim holds until the
		// run ends.
		rec, done, err := n.runs.claim(resumeID)
		if err != nil {
			return nil, err
		}
		prior = done
		inputs = rec.Inputs
	}
	if err := n.BeginCall(); err != nil {
		if resumeID != "" {
			n.runs.release(resumeID)
		}
		return nil, err
	}
	rec := n.runs.begin(inputs, n.def, resumeID, prior)
	emit := func(ev api.StepEvent) {
		data, _ := json.Marshal(ev)
		req.Emit(node.CallEvent{Kind: node.EventStep, Step: "graph", Data: data})
	}
	out, err := Run(ctx, n.def, inputs, RunOptions{
		Caller: n.env.Tools,
		Ask:    n.asker(),
		Emit:   emit,
		Record: rec.step,
		Commit: rec.commit,
		Tool:   n.toolInfo,
		Prior:  prior,
		Graph:  n.ID(),
		RunID:  rec.id,
	})
	rec.end(out, err, ctx.Err() != nil)
	n.EndCall(err != nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var re *RunError
		if errors.As(err, &re) {
			// A step failed: the tool ran and reports it.
			return failedResult(n.ID(), rec.id, re), nil
		}
		return nil, err
	}
	return outputResult(out), nil
}

// toolInfo is what the run needs of a step's tool: the arguments it runs
// as shell code. A tool the session does not list is not called, so that
// no value reaches a shell as code because the tool appeared mid-run.
func (n *Node) toolInfo(ctx context.Context, name string) (node.ShellParams, error) {
	if d, ok := n.env.Tools.(node.ToolDescriber); ok {
		t, err := d.DescribeTool(ctx, name)
		if err != nil {
			return node.ShellParams{}, err
		}
		return node.ShellParamsOf(t.Meta), nil
	}
	te, ok := n.env.Tools.Toolset(ctx).Lookup(name)
	if !ok {
		return node.ShellParams{}, fmt.Errorf("%w %q: no node offers it (list tools with `nerve tools`)", node.ErrUnknownTool, name)
	}
	return node.ShellParamsOf(te.Tool.Meta), nil
}

// outputResult is the graph's output as a tool result: a string as text;
// anything else as compact JSON text, and an object as structured content
// too.
func outputResult(out any) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: graphlang.Text(out)}}}
	if m, ok := out.(map[string]any); ok {
		res.StructuredContent = m
	}
	return res
}

func (n *Node) asker() Asker {
	if n.env.Hooks == nil {
		return nil
	}
	return func(ctx context.Context, q, page string) (*mcp.ElicitResult, error) {
		if page != "" {
			return n.env.Hooks.Elicit(ctx, n.ID(), urlElicitation(q, page)) // ask_url.go
		}
		return n.env.Hooks.Elicit(ctx, n.ID(), &mcp.ElicitParams{
			Message: q,
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"answer": map[string]any{"type": "string", "description": "your answer (optional)"},
				},
			},
		})
	}
}

// RunRecord returns the record of run id of this graph as JSON (the
// daemon's GET …/runs/{run}, `nerve --json graph show RUN`): inputs,
// output, and each step's state, time, arguments and result, whole up to
// 64 KiB each (Record).
func (n *Node) RunRecord(id string) (json.RawMessage, error) {
	return n.runs.record(id)
}

func (n *Node) Info() node.Info {
	info := n.BaseInfo()
	info.Tools = len(n.tools)
	info.Summary = fmt.Sprintf("%d steps", len(n.def.Steps))
	info.Details = map[string]any{"runs": n.runs.summaries(), "run_count": n.runs.count()}
	return info
}

// failure is the structured content of a failed run's result: where it
// failed and why, so that a graph that ran this one as a step says the
// reason once, with the graphs it went through, instead of nesting each
// graph's message in the next (a call-depth refusal hid behind eight
// "graph … failed at step …" lines; issue 27).
type failure struct {
	Graph string `json:"graph"`
	Step  string `json:"step"`
	// Reason is why the innermost failed step failed.
	Reason string `json:"reason"`
	// Through is the graphs and steps between this one's step and the
	// innermost, outermost first ("c2 at step s").
	Through []string `json:"through,omitempty"`
	Run     string   `json:"run"`
}

// failureKey is the key of a failure in a failed run's structured content.
const failureKey = "graph_failed"

// failedResult is the result of run runID of graph id that failed at a
// step (re).
func failedResult(id, runID string, re *RunError) *mcp.CallToolResult {
	f := failure{Graph: id, Step: re.Step, Reason: re.Err.Error(), Run: runID}
	var sf *stepFailure
	if errors.As(re.Err, &sf) && sf.res != nil {
		if inner, ok := failureOf(sf.res.Structured); ok {
			f.Reason = inner.Reason
			f.Through = append([]string{inner.Graph + " at step " + inner.Step}, inner.Through...)
		}
	}
	text := fmt.Sprintf("graph %s failed at step %s: %s (run %s)", id, f.Step, f.Reason, runID)
	if len(f.Through) > 0 {
		through := f.Through
		if len(through) > 4 {
			through = append(append(slices.Clone(through[:2]), fmt.Sprintf("%d more", len(through)-3)), through[len(through)-1])
		}
		text = fmt.Sprintf("graph %s failed at step %s: %s (through %s; run %s)", id, f.Step, f.Reason, strings.Join(through, " → "), runID)
	}
	return &mcp.CallToolResult{IsError: true,
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]any{failureKey: f},
	}
}

// failureOf reads the failure of a step's structured content, when the
// step was a graph's run that failed.
func failureOf(structured any) (failure, bool) {
	m, ok := structured.(map[string]any)
	if !ok || m[failureKey] == nil {
		return failure{}, false
	}
	b, err := json.Marshal(m[failureKey])
	var f failure
	if err != nil || json.Unmarshal(b, &f) != nil || f.Graph == "" || f.Reason == "" {
		return failure{}, false
	}
	return f, true
}
