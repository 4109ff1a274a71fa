package mcpnode

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// urlHooks answers elicitation as a person who opened the page would, and
// keeps what was asked.
type urlHooks struct{ asked chan *mcp.ElicitParams }

func (h *urlHooks) Sample(context.Context, string, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, node.ErrNoOneToAsk
}

func (h *urlHooks) Elicit(_ context.Context, _ string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.asked <- p
	return &mcp.ElicitResult{Action: "accept"}, nil
}

// TestURLElicitation: an mcp node declares URL-mode elicitation (MCP
// 2025-11-25), so a server may ask for it, and the request reaches the
// node's hooks with its URL and id (issue 27). Before, the server's SDK
// refused: `client does not support "url" elicitation`.
func TestURLElicitation(t *testing.T) {
	ev := newEvents()
	h := &urlHooks{asked: make(chan *mcp.ElicitParams, 1)}
	ev.hooks = h
	n, err := newNode(stdioSpec("fx", []string{testutil.BuildBinary(t, "./fixtures/mcpserver")}), ev.env(), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	const page = "https://example.com/connect?account=ada"
	res, err := n.CallTool(t.Context(), &node.CallRequest{Tool: "elicit_url", Arguments: json.RawMessage(`{"url":"` + page + `","message":"Connect your account"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "user chose accept" {
		t.Errorf("the server got %q, want the person's accept", got)
	}
	select {
	case p := <-h.asked:
		if p.Mode != "url" || p.URL != page || p.ElicitationID == "" || p.Message != "Connect your account" {
			t.Errorf("the hooks were asked %+v, want mode url, the page, an id and the message", p)
		}
	default:
		t.Error("the hooks were not asked")
	}
}
