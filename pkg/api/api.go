// Package api holds the wire types of nerve's local API: the JSON bodies
// and the newline-delimited JSON lines the daemon (internal/daemon) sends
// and the Go client (pkg/client) reads. It is a leaf: it imports only the
// standard library and the node and session vocabulary, so any program may
// import it to speak to a daemon.
package api

import (
	"encoding/json"
	"time"
)

// Version is the version of the local API; it is the "v1" of every route.
const Version = "1"

// Headers on every response.
const (
	// HeaderAPIVersion carries Version.
	HeaderAPIVersion = "Nerve-Api-Version"
	// HeaderVersion carries the daemon's build version; a client built
	// from another version warns.
	HeaderVersion = "Nerve-Version"
)

// ContentTypeNDJSON is the media type of streamed responses (calls, events).
const ContentTypeNDJSON = "application/x-ndjson"

// HeaderClientEnv, on a request that adds or restarts a node, carries the
// client's environment (base64 of a JSON list of KEY=VALUE): the node's
// ${VAR} references resolve against it first. The daemon keeps it in
// memory only.
const HeaderClientEnv = "Nerve-Client-Env"

// HeaderCaller, on a call, says who calls, for the call log: "cli" (`nerve
// call`), "repl" (the Commander), or any other name (a program on the API,
// logged as caller "api:NAME"). Without it the caller is "api".
const HeaderCaller = "Nerve-Caller"

// HeaderETag, on the answer to a GET or PUT of one node, is its spec's
// version tag: a strong entity tag of the spec's saved JSON. Sent back
// as HeaderIfMatch on a PUT, it makes the replace happen only if nobody
// changed the node meanwhile (else 412, CodeChanged).
const (
	HeaderETag    = "ETag"
	HeaderIfMatch = "If-Match"
)

// Error codes: the machine-readable half of an Error. A client maps them
// (with the HTTP status) to typed errors.
const (
	CodeBadRequest      = "bad_request"       // 400: the request itself is malformed
	CodeBadArgs         = "bad_args"          // 400: tool arguments do not match the schema
	CodeForbidden       = "forbidden"         // 403: wrong uid or a browser (Origin)
	CodeNodeNotFound    = "node_not_found"    // 404
	CodeSessionNotFound = "session_not_found" // 404
	CodeUnknownTool     = "unknown_tool"      // 404
	CodeNotFound        = "not_found"         // 404: no such route
	CodeExists          = "exists"            // 409: a node with that id exists
	CodeNotReady        = "not_ready"         // 409: the node cannot take calls now
	CodeChanged         = "changed"           // 412: If-Match names a spec the node no longer has
	CodeStartFailed     = "start_failed"      // 502: the node was added but did not start
	CodeCallFailed      = "call_failed"       // 502: the call could not be made
	CodeShuttingDown    = "shutting_down"     // 503: the daemon stopped while the request ran
	CodeStopping        = "stopping"          // 503: the daemon is stopping and ran nothing of the request: send it again once a daemon answers
	CodeInternal        = "internal"          // 500
)

// Error is the body of every error response, and the error line of a call
// stream. Message is for people and says what to do.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Node is set when the error concerns a node that exists (a node that
	// was added but did not start).
	Node *Info `json:"node,omitempty"`
}

// ErrorBody wraps Error in responses: {"error": {...}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// VersionInfo answers GET /v1/version.
type VersionInfo struct {
	Version    string    `json:"version"`
	APIVersion string    `json:"api_version"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Embedded   bool      `json:"embedded,omitempty"`
	StateDir   string    `json:"state_dir,omitempty"`
	Socket     string    `json:"socket,omitempty"`
	// Notices are things the daemon wants a person to know (a corrupt state
	// file moved aside, a session that did not come back).
	Notices []string `json:"notices,omitempty"`
}

// SessionInfo is one entry of GET /v1/sessions.
type SessionInfo struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"`
	// States counts nodes by state name.
	States map[string]int `json:"states,omitempty"`
}

// NodeDetail answers GET /v1/sessions/{session}/nodes/{node}.
type NodeDetail struct {
	Info Info `json:"info"`
	Spec Spec `json:"spec"`
}

// Tool is one entry of a session's toolset (GET /v1/sessions/{s}/tools).
type Tool struct {
	Node      string `json:"node"`
	Qualified string `json:"qualified"`
	LLMName   string `json:"llm_name"`
	// Tool is the MCP tool (an mcp.Tool: name, description, inputSchema,
	// …), as the node listed it.
	Tool json.RawMessage `json:"tool"`
}

// ToolSearch answers GET /v1/sessions/{s}/tools/search?q=WORDS (and
// &limit=N, &now=1 not to wait for nodes that are starting): the
// session's tools ranked for the words, as search_tools ranks them.
type ToolSearch struct {
	Tools []FoundTool `json:"tools"`
	// Of is how many tools the search went through.
	Of int `json:"of"`
	// Nearest: no tool matched the words; Tools are the nearest by
	// spelling. A search answers empty only when there is no tool.
	Nearest bool `json:"nearest,omitempty"`
}

// FoundTool is one tool a search found, and its score (higher is
// better; comparable within one answer only).
type FoundTool struct {
	Tool
	Score float64 `json:"score"`
}

// CallRequest is the body of POST /v1/sessions/{s}/nodes/{n}/call.
type CallRequest struct {
	// Line, instead of Tool and Arguments, is a whole Commander line naming
	// the route's node (`@fs read_file path=/tmp/a`, as `nerve call` joins
	// its words): the daemon parses it against the node's tools with the
	// Commander's parser and makes the call, so a one-shot call is one
	// request. A line that is not a call (help, or one that does not parse)
	// runs nothing: the stream's one line is a LineTools line, and the
	// client parses the line itself and reports what is wrong.
	Line      string          `json:"line,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Meta is passed to the node as the call's _meta (node.CallRequest.Meta).
	Meta map[string]any `json:"_meta,omitempty"`
}

// Call stream line kinds, beyond the CallEvent kinds (progress, log,
// text, step).
const (
	LineState  = "state"  // the node changed state during the call: From, To, Reason
	LineResult = "result" // the last line of a call that was made: Result
	LineError  = "error"  // the last line of a call that could not be made: Error
	LineTools  = "tools"  // the only line for a CallRequest.Line that is not a call: Tools
)

// CallLine is one line of a call stream. A stream ends with exactly one
// "result", "error" or "tools" line; a stream that ends without one was
// cut.
type CallLine struct {
	CallEvent
	From     string        `json:"from,omitempty"`
	To       string        `json:"to,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// Result is the tool's result, an MCP CallToolResult, as JSON
	// (pkg/client/mcpclient decodes it).
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Tools is the node's tools (a JSON list of MCP tools) on a LineTools
	// line.
	Tools json.RawMessage `json:"tools,omitempty"`
	// Skipped, on the daemon's warning log line, is how many events of
	// the call it dropped just before this line because the client did
	// not read them in time: text streamed so far has a gap, and only the
	// result is whole.
	Skipped int `json:"skipped,omitempty"`
}

// NodeResponse answers add, replace and restart with the node's Info
// afterwards.
type NodeResponse struct {
	Info Info `json:"info"`
	// Warnings, on an add or a replace, are what the kind's check found
	// worth a person's eye without refusing the spec (a graph's raw
	// reference reaching a shell, a call whose node is down), each at
	// LINE:COLUMN of the definition where it has a place.
	Warnings []string `json:"warnings,omitempty"`
}
