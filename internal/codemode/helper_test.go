package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// fakeTools is an in-memory node.ToolCaller: each tool a Go function.
type fakeTools struct {
	ts    *node.Toolset
	funcs map[string]func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)
	mu    sync.Mutex
	log   []fakeCall
}

type fakeCall struct {
	name   string
	args   map[string]any
	caller node.Caller
}

type fakeTool struct {
	node string
	tool *mcp.Tool
	fn   func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)
}

func newFake(tools ...fakeTool) *fakeTools {
	f := &fakeTools{funcs: map[string]func(context.Context, map[string]any) (*mcp.CallToolResult, error){}}
	f.ts = node.ToolsetOf(func(yield func(string, *mcp.Tool) bool) {
		for _, t := range tools {
			f.funcs[node.QualifiedName(t.node, t.tool.Name)] = t.fn
			if !yield(t.node, t.tool) {
				return
			}
		}
	})
	return f
}

func (f *fakeTools) Toolset(context.Context) *node.Toolset { return f.ts }

func (f *fakeTools) CallTool(ctx context.Context, name string, args json.RawMessage, _ func(node.CallEvent)) (*mcp.CallToolResult, error) {
	te, ok := f.ts.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q", node.ErrUnknownTool, name)
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, err
	}
	c, _ := node.CallerFrom(ctx)
	f.mu.Lock()
	f.log = append(f.log, fakeCall{name: te.Qualified, args: m, caller: c})
	f.mu.Unlock()
	return f.funcs[te.Qualified](ctx, m)
}

func (f *fakeTools) calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.log...)
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// standardFake has the tools most tests use.
func standardFake() *fakeTools {
	return newFake(
		fakeTool{"e1", &mcp.Tool{Name: "echo", Description: "Echo the text back.\nMore lines.", InputSchema: schema(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
			func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
				return textResult(fmt.Sprint(a["text"])), nil
			}},
		fakeTool{"e1", &mcp.Tool{Name: "get-sum", Description: "Add two numbers.", InputSchema: schema(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
			func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
				x, _ := a["a"].(float64)
				y, _ := a["b"].(float64)
				return textResult(fmt.Sprint(x + y)), nil
			}},
		fakeTool{"e1", &mcp.Tool{Name: "fail", InputSchema: schema(`{"type":"object"}`)},
			func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil
			}},
		fakeTool{"my-fs", &mcp.Tool{Name: "stat", Description: "File facts.", InputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			OutputSchema: schema(`{"type":"object","properties":{"size":{"type":"integer"},"name":{"type":"string"}}}`)},
			func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"size": 42.0, "name": a["path"]}}, nil
			}},
		fakeTool{"sh", &mcp.Tool{Name: "bash", InputSchema: schema(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
			func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
				return textResult("ran " + fmt.Sprint(a["command"])), nil
			}},
	)
}
