package mcpnode

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tapTransport hands progress and log notifications to the node in the
// order they arrive, before the call's result, and keeps in each result
// what the SDK would drop of tasks (liftResult). The SDK runs notification
// handlers on another goroutine than the one that delivers responses, so a
// log line sent just before a result would often reach a call that had
// already returned.
//
// It is used for stdio and in-memory connections only: wrapping hides the
// SDK's unexported per-connection hook, which streamable HTTP needs (for
// its protocol-version header) and the newline-delimited stream does not.
// http and sse nodes are tapped one level down, where their response
// bodies are read (guardTransport).
type tapTransport struct {
	mcp.Transport
	n *Node
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, n: t.n}, nil
}

type tapConn struct {
	mcp.Connection
	n *Node
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Result != nil {
		if out, ok := liftResult(resp.Result); ok { // tasks.go
			resp.Result = out
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.n.notified(req)
	}
	return msg, err
}

// notified hands a progress or log notification of the server's to the
// calls in flight; it ignores every other message. Both taps call it: a
// tapConn for stdio and in-memory connections, and the guard of an http or
// sse node's response bodies (guardTransport), each before the SDK can see
// the message that comes next.
func (n *Node) notified(req *jsonrpc.Request) {
	if req.IsCall() {
		return
	}
	switch req.Method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) == nil {
			n.progress(&p)
		}
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) == nil {
			n.logMessage(&p)
		}
	}
}
