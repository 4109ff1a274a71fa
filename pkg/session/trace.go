package session

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/node"
)

// tracedCall is Call as a span (internal/telemetry): the node's own spans
// (an mcp node's client span, a graph's run) and the calls they make are
// its children.
func (s *Session) tracedCall(ctx context.Context, id string, req *node.CallRequest) (*mcp.CallToolResult, error) {
	c, _ := node.CallerFrom(ctx)
	ctx, sp := telemetry.SessionCall(ctx, s.name, id, req.Tool, c.String())
	res, err := s.loggedCall(ctx, id, req)
	sp.EndCall(res != nil && res.IsError, err)
	return res, err
}
