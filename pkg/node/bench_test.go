package node

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func BenchmarkValidateArguments(b *testing.B) {
	cases := []struct {
		name, schema, args string
	}{
		{"identity", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, `{"text":"hello"}`},
		{"nested", editSchema, `{"path": "a", "edits": [{"oldText": "x", "newText": "y"}], "mode": "append", "dryRun": null}`},
		{"bounds", editSchema, `{"path": "a", "count": 3, "tags": ["x"]}`},
		{"full_validation", editSchema, `{"path": "a", "name": "abc"}`}, // a pattern
		{"error", readFileSchema, `{"pth": "/tmp/a"}`},
	}
	// The schema is resolved once, as the session's tool cache keeps it.
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := NewArgSchema(clientTool(b, c.schema))
			args := json.RawMessage(c.args)
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Validate(args)
			}
		})
	}
}

// BenchmarkNewArgSchema is what reading and resolving a tool's schema
// costs, once per tool per listing.
func BenchmarkNewArgSchema(b *testing.B) {
	tool := clientTool(b, editSchema)
	b.ReportAllocs()
	for b.Loop() {
		NewArgSchema(tool)
	}
}

func benchNodes(nodes, tools int) []NodeTools {
	ns := make([]NodeTools, nodes)
	for i := range ns {
		ns[i].Node = fmt.Sprintf("node%d", i)
		for j := 0; j < tools; j++ {
			ns[i].Tools = append(ns[i].Tools, &mcp.Tool{Name: fmt.Sprintf("tool.number_%d", j)})
		}
	}
	return ns
}

func BenchmarkNewToolset(b *testing.B) {
	nodes := benchNodes(50, 200)
	b.ReportAllocs()
	for b.Loop() {
		NewToolset(nodes)
	}
}

func BenchmarkLookup(b *testing.B) {
	ts := NewToolset(benchNodes(50, 200))
	for _, name := range []string{"node49.tool.number_199", "node49__tool_number_199"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ts.Lookup(name); !ok {
					b.Fatal("not found")
				}
			}
		})
	}
}

func BenchmarkResultText(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}
	b.ReportAllocs()
	for b.Loop() {
		ResultText(res, 0)
	}
}

// BenchmarkValidateArgumentsParallel is the identity case from every core,
// as a session under load runs it.
func BenchmarkValidateArgumentsParallel(b *testing.B) {
	a := NewArgSchema(clientTool(b, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = a.Validate(args)
		}
	})
}
