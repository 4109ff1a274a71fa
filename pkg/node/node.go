package node

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Node is one tool provider held by a session: a bash shell, an MCP server
// connection, a Claude Code process, an LLM agent.
//
// All methods are safe for concurrent use. A tool that ran and failed is a
// result with IsError set; an error from CallTool means the call could not be
// made (unknown tool, bad arguments, node not ready, connection lost).
type Node interface {
	ID() string
	Kind() string
	State() State
	// Start moves CREATED|STOPPED → STARTING → READY (or ERROR). It returns
	// once the node is READY or has failed.
	Start(ctx context.Context) error
	// Stop moves any state → STOPPING → STOPPED; it is the only way out of
	// ERROR. Stop on a STOPPED or CREATED node is a no-op.
	Stop(ctx context.Context) error
	// Interrupt cancels what is in flight; the node stays usable.
	Interrupt(ctx context.Context) error
	// ListTools returns the node's tools (at least one when READY). The
	// slice and the tools must not be modified by the caller.
	ListTools(ctx context.Context) ([]*mcp.Tool, error)
	CallTool(ctx context.Context, req *CallRequest) (*mcp.CallToolResult, error)
	Info() Info
}

// Sentinel errors callers test with errors.Is (pkg/api's, so a client
// matches them without this package).
var (
	ErrNotReady    = api.ErrNotReady
	ErrUnknownTool = api.ErrUnknownTool
	ErrBadArgs     = api.ErrBadArgs
	ErrNotFound    = api.ErrNotFound
)

// CallRequest is one tool call.
type CallRequest struct {
	// Tool is the node-local tool name (not qualified).
	Tool string
	// Arguments is a JSON object; nil means {}.
	Arguments json.RawMessage
	// Meta is the caller's _meta of the call (MCP tools/call params):
	// requests about the call that are not the tool's arguments, such as
	// a graph's "nerve.dev/resume". Nil when none.
	Meta map[string]any
	// Observe, if set, receives the call's progress, log messages and
	// streamed output while it runs. It must not block: a node calls it
	// on the goroutine that reads its server (an mcp node's every call
	// waits while it runs). An observer that writes to a client that may
	// stop reading queues the event and drops what does not fit
	// (internal/sendq), as the daemon's call route and MCP server do.
	Observe func(CallEvent)
}

// Emit sends ev to the request's observer, if any.
func (r *CallRequest) Emit(ev CallEvent) {
	if r != nil && r.Observe != nil {
		r.Observe(ev)
	}
}

// CallEvent kinds.
const (
	EventProgress = api.EventProgress // Progress, Total, Message
	EventLog      = api.EventLog      // Level, Logger, Data
	EventText     = api.EventText     // Text: streamed output to show as it arrives
	EventStep     = api.EventStep     // Step, Data: a structured step (tool use, tool result, usage, thinking)
)

// CallEvent is something that happened during a call. It is also the wire
// form of call events in the daemon's API.
type CallEvent = api.CallEvent

// Info describes a node for people and tools.
type Info = api.Info
