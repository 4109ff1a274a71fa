package node

import (
	"context"
	"errors"

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

// ErrNoOneToAsk is a request for a person (sampling, elicitation) that no
// one attached could answer: no Commander, no MCP client that supports it.
var ErrNoOneToAsk = errors.New("no one is attached to answer this request; it was declined")

// MetaUnanswered marks, in an ElicitResult's _meta, a decline that no
// person gave: no one was attached to ask.
const MetaUnanswered = "nerve.dev/unanswered"

// NoOneDeclined is the decline given when no one is attached to ask.
func NoOneDeclined() *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "decline", Meta: mcp.Meta{MetaUnanswered: true}}
}

// ToolDescriber is a ToolCaller that can say what a tool is before it is
// called, or why it cannot be called (a node in ERROR, with the fix). The
// session is one.
type ToolDescriber interface {
	DescribeTool(ctx context.Context, name string) (*mcp.Tool, error)
}
