package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/pkg/node"
)

// codeCache adds run_script to the tools offered (Options.Code): its
// description lists the tools the node may call as function signatures.
func (n *Node) codeCache(c toolCache) toolCache {
	opts := &codemode.ToolOptions{Visible: n.scriptVisible}
	if n.opts.Discover {
		opts.Search = discoverSearch
	}
	t := codemode.Tool(c.ts, opts)
	pt := provider.Tool{Name: t.Name, Description: t.Description, Parameters: CleanSchema(t.InputSchema)}
	c.tools = slices.Concat(c.tools, []provider.Tool{pt})
	if c.byLLM == nil {
		c.byLLM = map[string]node.ToolEntry{}
	}
	c.code = true
	b, _ := json.Marshal(pt.Parameters)
	c.bytes += len(b) + len(pt.Name) + len(pt.Description) + 32
	return c
}

// scriptVisible is what the model's scripts may see and call: the tools
// the node may call, never its own.
func (n *Node) scriptVisible(id string, t *mcp.Tool) bool {
	return id != n.ID() && selected(n.opts.Tools, node.ToolEntry{Node: id, Qualified: node.QualifiedName(id, t.Name)})
}

// runScript runs the script of a run_script call: its tool calls are the
// session's, made as this node's script (script:llm:NODE/LINE:COLUMN in
// the call log); each call's end reaches the caller as progress. The
// model reads run_script's answer: what the script printed and its
// result, or its error at its line and column.
func (n *Node) runScript(ctx context.Context, em *emitter, step int, tc provider.ToolCall, tools toolCache) (string, bool) {
	args := json.RawMessage(tc.Arguments)
	callData := toolCallData{Step: step, ID: tc.ID, Name: tc.Name, Tool: codemode.ToolName, Arguments: args}
	var in struct {
		Script string `json:"script"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Script == "" {
		if !json.Valid(args) {
			callData.Arguments, _ = json.Marshal(tc.Arguments)
		}
		em.step(StepToolCall, callData)
		text := `Error: run_script needs {"script": "Starlark source"}; its description lists the tools a script can call`
		em.step(StepToolResult, toolResultData{Step: step, ID: tc.ID, Tool: codemode.ToolName, IsError: true, Text: text})
		return text, true
	}
	em.step(StepToolCall, callData)
	calls := 0
	opts := &codemode.Options{Tools: n.env.Tools, Visible: n.scriptVisible, Observe: func(ev node.CallEvent) {
		var d struct {
			Step  string `json:"step"`
			State string `json:"state"`
			Line  int    `json:"line"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		calls++
		em.emit(node.CallEvent{Kind: node.EventProgress, Progress: float64(calls), Message: fmt.Sprintf("run_script: %s %s (line %d)", d.Step, d.State, d.Line)})
	}}
	cctx := node.WithCaller(ctx, node.Caller{Kind: node.CallerLLM, Name: n.ID()})
	res := codemode.ToolResult(codemode.Run(cctx, in.Script, opts))
	text, isError := node.ResultText(res, n.maxResultBytes()), res.IsError
	em.step(StepToolResult, toolResultData{Step: step, ID: tc.ID, Tool: codemode.ToolName, IsError: isError, Text: text})
	return text, isError
}
