package telemetry

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerMiddleware is an MCP server's receiving middleware that traces
// each tools/call (MCPServer), continuing the client's trace from the
// request's _meta or HTTP headers. nerve's MCP server (internal/mcpserver)
// puts it outermost, so the span covers the whole call.
func ServerMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" || !On() {
			return next(ctx, method, req)
		}
		var name string
		var meta map[string]any
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			name, meta = p.Name, p.Meta
		}
		var header http.Header
		if ex := req.GetExtra(); ex != nil {
			header = ex.Header
		}
		var sid string
		if ss := req.GetSession(); ss != nil {
			sid = ss.ID()
		}
		ctx, sp := MCPServer(ctx, name, sid, meta, header)
		res, err := next(ctx, method, req)
		r, _ := res.(*mcp.CallToolResult)
		sp.EndCall(r != nil && r.IsError, err)
		return res, err
	}
}
