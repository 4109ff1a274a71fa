package node_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nerve-dev/nerve/pkg/node"
)

func ExampleNewToolset() {
	ts := node.NewToolset([]node.NodeTools{
		{Node: "fs", Tools: []*mcp.Tool{{Name: "read_file"}}},
		{Node: "gh", Tools: []*mcp.Tool{{Name: "repo.list"}, {Name: "repo_list"}}},
	})
	for _, e := range ts.Tools() {
		fmt.Println(e.Qualified, e.LLMName)
	}
	n, tool, _ := ts.Resolve("fs__read_file")
	fmt.Println(n, tool)
	// Output:
	// fs.read_file fs__read_file
	// gh.repo.list gh__repo_list_62ef43bec9
	// gh.repo_list gh__repo_list_5007e9e660
	// fs read_file
}

func ExampleResultText() {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "Rendered the chart."},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 34*1024)},
	}}
	fmt.Println(node.ResultText(res, 0))
	// Output:
	// Rendered the chart.
	// [image/png 34 KB]
}
