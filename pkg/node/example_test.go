package node_test

import (
	"encoding/json"
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

func ExampleNewArgSchema() {
	tool := &mcp.Tool{Name: "read_file", InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"path": {"type": "string", "description": "the file to read"}},
		"required": ["path"],
		"additionalProperties": false
	}`)}
	args := node.NewArgSchema(tool) // once per tool: keep it beside the tool
	fmt.Println(args.Validate(json.RawMessage(`{"path": "/tmp/a"}`)))
	fmt.Println(args.Validate(json.RawMessage(`{"pth": "/tmp/a"}`)))
	fmt.Println(args.Validate(json.RawMessage(`{"path": 3}`)))
	// Output:
	// <nil>
	// invalid arguments: unknown argument "pth" (did you mean "path"?); missing required argument "path" (string: the file to read)
	// invalid arguments: argument "path": expected string, got number
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
