package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRelayURLElicitation: a server's URL-mode elicitation (MCP
// 2025-11-25) reaches an MCP client of nerve that declared URL mode,
// with its URL; a client that declared only forms is never sent one (the
// SDK refuses, and the call failed): with no client that can answer, the
// server is told the request was declined (issue 27).
func TestRelayURLElicitation(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	srv := serve(t, NewSessionBackend(s), &Options{Node: "fx"})
	formOnly, _ := connect(t, srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("a client that declared only forms was sent a URL elicitation")
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	args := map[string]any{"url": "https://example.com/connect", "message": "Connect your account"}
	res, err := formOnly.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit_url", Arguments: args})
	if err != nil || !strings.Contains(resultText(res), "user chose decline") {
		t.Fatalf("with no client that opens pages: %v %s, want the server told decline", err, mustJSON(res))
	}

	asked := make(chan *mcp.ElicitParams, 1)
	connect(t, srv, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	res, err = formOnly.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit_url", Arguments: args})
	if err != nil || !strings.Contains(resultText(res), "user chose accept") {
		t.Fatalf("with a client that opens pages: %v %s, want its accept", err, mustJSON(res))
	}
	if p := <-asked; p.Mode != "url" || p.URL != "https://example.com/connect" || p.Message != "Connect your account" || p.ElicitationID == "" {
		t.Errorf("the client was asked %+v", p)
	}
}
