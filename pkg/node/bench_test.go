package node

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
