package node

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaShell is the key of a tool's _meta naming the argument whose string
// the tool runs as shell code (the bash kind's "command"). Graphs quote
// every reference they place into that argument for the shell, so a value
// a caller gives is never run as code (docs/graphs.md, "Quoting").
const MetaShell = "nerve.dev/shell"

// ShellArg returns the name of the argument meta marks as shell code, or "".
func ShellArg(meta map[string]any) string {
	s, _ := meta[MetaShell].(string)
	return s
}

// ToolDescriber is a ToolCaller that can say what a tool is before it is
// called, or why it cannot be called (a node in ERROR, with the fix). The
// session is one.
type ToolDescriber interface {
	DescribeTool(ctx context.Context, name string) (*mcp.Tool, error)
}
