package node

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// Sentinel errors callers test with errors.Is.
var (
	ErrNotReady    = errors.New("node is not ready")
	ErrUnknownTool = errors.New("unknown tool")
	ErrBadArgs     = errors.New("invalid arguments")
	ErrNotFound    = errors.New("node not found")
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
	// streamed output while it runs. It must not block for long.
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
	EventProgress = "progress" // Progress, Total, Message
	EventLog      = "log"      // Level, Logger, Data
	EventText     = "text"     // Text: streamed output to show as it arrives
	EventStep     = "step"     // Step, Data: a structured step (tool use, tool result, usage, thinking)
)

// CallEvent is something that happened during a call. It is also the wire
// form of call events in the daemon's API.
type CallEvent struct {
	Kind     string          `json:"kind"`
	Progress float64         `json:"progress,omitempty"`
	Total    float64         `json:"total,omitempty"`
	Message  string          `json:"message,omitempty"`
	Level    string          `json:"level,omitempty"`
	Logger   string          `json:"logger,omitempty"`
	Text     string          `json:"text,omitempty"`
	Step     string          `json:"step,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// Info describes a node for people and tools.
type Info struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	State    State     `json:"state"`
	Error    string    `json:"error,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Tools    int       `json:"tools"`
	InFlight int64     `json:"in_flight"`
	Calls    int64     `json:"calls"`
	Failures int64     `json:"failures"`
	// Summary is a one-line description of what the node runs.
	Summary string `json:"summary,omitempty"`
	// Details holds kind-specific facts (server info, Claude session id, …).
	Details map[string]any `json:"details,omitempty"`
}
