package api

import "time"

// Settings apply to every node of a session that has no setting of its
// own; they are saved with the session (GET/PUT …/settings).
type Settings struct {
	// Idle stops an MCP server node after that long without a call (its
	// catalogue kept; the next call starts it again). Zero: never.
	Idle Duration `json:"idle,omitempty"`
	// Expose is the tool filter every MCP client of the session gets
	// (comma-separated globs over node.tool, "!" to exclude); a client's
	// own filter can only narrow it. Empty: every tool.
	Expose string `json:"expose,omitempty"`
	// Policy decides whether a call from an agent — an MCP client, an llm
	// node, a graph, a script; not a person's own (the Commander, `nerve
	// call`, the dashboard, a program on the local API) — runs: comma-separated GLOB=ACTION rules over node.tool (the
	// globs of Expose), ACTION allow, ask or deny, the first rule that
	// matches wins, no match allows. Empty: every call runs.
	Policy string `json:"policy,omitempty"`
	// AskTimeout bounds how long an "ask" waits for a person before the
	// call is refused. Zero: 2 minutes.
	AskTimeout Duration `json:"ask_timeout,omitempty"`
}

// Event kinds.
const (
	EventState       = "state"        // From, To, Reason
	EventTools       = "tools"        // the node's tool list changed
	EventNodeAdded   = "node_added"   // Kind
	EventNodeRemoved = "node_removed" //
	EventCallStart   = "call_start"   // Call, Tool
	EventCallEnd     = "call_end"     // Call, Tool, Duration, IsError, Error
	EventSettings    = "settings"     // the session's settings changed (no node)
)

// Event is something that happened in a session: one line of GET
// /v1/sessions/{s}/events (pkg/session publishes it as session.Event).
type Event struct {
	Seq      uint64        `json:"seq"`
	Time     time.Time     `json:"time"`
	Session  string        `json:"session"`
	Kind     string        `json:"kind"`
	Node     string        `json:"node,omitempty"`
	NodeKind string        `json:"node_kind,omitempty"`
	From     string        `json:"from,omitempty"`
	To       string        `json:"to,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Call     uint64        `json:"call,omitempty"`
	Tool     string        `json:"tool,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	IsError  bool          `json:"is_error,omitempty"`
	Error    string        `json:"error,omitempty"`
}
