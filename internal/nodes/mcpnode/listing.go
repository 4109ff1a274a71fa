package mcpnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// What a server's tool listing may be at start (issue 27):
//
//   - a server that does not declare the tools capability is asked for its
//     tools all the same (the seeds' mock server is one): what it answers
//     is listed, an error or no answer within undeclaredWait is no tools,
//     and neither fails the start; node info says it did not declare it;
//   - a server that declares it and answers tools/list with an error keeps
//     its connection, with no tools and a warning in node info and the
//     log, unless the node's option require_tools asks for a failed start.

// undeclaredWait bounds the tools/list sent to a server that did not
// declare the tools capability: it may never answer a method it does not
// offer, and the start must not wait its whole timeout for that.
const undeclaredWait = 5 * time.Second

// listTools lists the server's tools on connection c, and what its pages
// said of caching (nil: no list); declared says the server declared the
// tools capability. It also sets what node info says of the listing
// (toolsNote).
func (n *Node) listTools(ctx context.Context, c *conn, declared bool) ([]*mcp.Tool, *listCache, error) {
	list := func(ctx context.Context) ([]*mcp.Tool, listCache, error) {
		return listAll(ctx, func(ctx context.Context, cur string) (*mcp.ListToolsResult, error) {
			return c.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cur})
		}, func(r *mcp.ListToolsResult) ([]*mcp.Tool, string) { return r.Tools, r.NextCursor })
	}
	if declared {
		tools, lc, err := list(ctx)
		if err != nil {
			return nil, nil, &listError{err: err}
		}
		n.mu.Lock()
		n.toolsNote, n.toolsWarning = "", ""
		n.mu.Unlock()
		return tools, &lc, nil
	}
	pctx, cancel := context.WithTimeout(ctx, undeclaredWait)
	defer cancel()
	tools, lc, err := list(pctx)
	if err != nil {
		n.log.Info("the server does not declare the tools capability and did not list tools", zap.Error(err))
		n.setToolsNote("not declared by the server; it did not list tools either")
		return nil, nil, nil
	}
	n.setToolsNote(fmt.Sprintf("not declared by the server; listed all the same (tools/list answered %d)", len(tools)))
	return tools, &lc, nil
}

func (n *Node) setToolsNote(s string) {
	n.mu.Lock()
	n.toolsNote = s
	n.mu.Unlock()
}

// keepWithoutTools decides what a failed tools/list at start does: it
// reports whether the node stays connected with no tools (the server
// answered the request with an error, and the node does not require
// tools), and then records the warning.
func (n *Node) keepWithoutTools(err error) bool {
	var le *listError
	var rpc *jsonrpc.Error
	if n.opts.RequireTools || !errors.As(err, &le) || !errors.As(err, &rpc) {
		return false // a dead or hung server is a failed start whatever the option
	}
	warn := fmt.Sprintf("listing its tools (tools/list) failed at start: %s; the node runs with no tools until the server says its list changed, or `nerve node restart %s` (option require_tools fails the start instead)", rpcText(rpc), n.ID())
	n.log.Warn("the server's tools/list failed at start; running with no tools", zap.Error(err))
	n.mu.Lock()
	n.tools, n.toolIndex, n.toolsWarning = nil, map[string]*mcp.Tool{}, warn
	n.mu.Unlock()
	return true
}

// rpcText is a JSON-RPC error as node info says it: its message, its code
// in words.
func rpcText(e *jsonrpc.Error) string {
	if w := codeWords(e.Code); w != "" {
		return fmt.Sprintf("%s (%s; code %d)", e.Message, w, e.Code)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// listingInfoLocked adds what node info says of the tool listing. n.mu is
// held.
func (n *Node) listingInfoLocked(d map[string]any) {
	if n.toolsNote != "" {
		d["tools_capability"] = n.toolsNote
	}
	if n.toolsWarning != "" && n.conn != nil {
		d["warning"] = n.toolsWarning
	}
	if src := n.server.Source; src != nil {
		d["from"] = src.String()
	}
}

// withSource adds to a message of the server's failure where an imported
// server is written, so the person knows which file to fix (issue 27).
func (n *Node) withSource(msg string) string {
	if n.server.Source == nil || msg == "" {
		return msg
	}
	return msg + "\nfrom " + n.server.Source.String()
}
