package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/node"
)

// CallInfo is one finished call, as Options.OnCall is told of it.
type CallInfo struct {
	Node      string
	Tool      string
	Arguments json.RawMessage
	// Caller is who made the call (node.WithCaller); zero when the call's
	// context carried none.
	Caller   node.Caller
	Start    time.Time
	Duration time.Duration
	Result   *mcp.CallToolResult
	Err      error
	// Decision is what the call policy made of the call (policy.go); nil
	// when it had nothing to decide.
	Decision *Decision
}

// Call validates req's arguments against the tool's input schema and calls
// it on node id, publishing call_start and call_end events. Every call of
// the session passes here — the CLI's and the REPL's through the daemon,
// MCP clients', graph steps', llm nodes' — so Options.OnCall hears of each
// exactly once, with its caller, failed ones included (issue 22, item 9).
// With tracing on, each call is a span (trace.go).
func (s *Session) Call(ctx context.Context, id string, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if telemetry.On() {
		return s.tracedCall(ctx, id, req)
	}
	return s.loggedCall(ctx, id, req)
}

func (s *Session) loggedCall(ctx context.Context, id string, req *node.CallRequest) (*mcp.CallToolResult, error) {
	s.usageOf().Called(node.QualifiedName(id, req.Tool)) // what search ranks by (search.go)
	if s.onCall == nil {
		return s.call(ctx, id, req, nil)
	}
	start := time.Now()
	var dec Decision
	res, err := s.call(ctx, id, req, &dec)
	c, _ := node.CallerFrom(ctx)
	info := &CallInfo{
		Node: id, Tool: req.Tool, Arguments: req.Arguments, Caller: c,
		Start: start, Duration: time.Since(start), Result: res, Err: err,
	}
	if dec.Action != "" {
		info.Decision = &dec
	}
	s.onCall(ctx, info)
	return res, err
}
