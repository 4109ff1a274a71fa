package argcheck_test

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/argcheck"
)

func ExampleNew() {
	tool := &mcp.Tool{Name: "read_file", InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"path": {"type": "string", "description": "the file to read"}},
		"required": ["path"],
		"additionalProperties": false
	}`)}
	args := argcheck.New(tool) // once per tool: keep it beside the tool
	fmt.Println(args.Validate(json.RawMessage(`{"path": "/tmp/a"}`)))
	fmt.Println(args.Validate(json.RawMessage(`{"pth": "/tmp/a"}`)))
	fmt.Println(args.Validate(json.RawMessage(`{"path": 3}`)))
	// Output:
	// <nil>
	// invalid arguments: unknown argument "pth" (did you mean "path"?); missing required argument "path" (string: the file to read)
	// invalid arguments: argument "path": expected string, got number
}
