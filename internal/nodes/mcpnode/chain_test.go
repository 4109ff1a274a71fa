package mcpnode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// serverNode is a node talking in memory to srv.
func serverNode(t *testing.T, srv *mcp.Server, ev *events) *Node {
	t.Helper()
	cfg := defaultConfig()
	cfg.transport = func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatalf("connecting the in-memory server: %v", err)
		}
		t.Cleanup(func() { ss.Close() })
		return ct
	}
	n, err := newNode(node.Spec{ID: "loop", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp"}`)}, ev.env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Issue 21, item 3: a node whose server is nerve's endpoint of one node
// (serverInfo name "nerve/NODE") is refused when it connects, as a whole
// session already was.
func TestNerveNodeEndpointRefused(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "nerve/g", Version: "dev"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "run"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ev := newEvents()
	n := serverNode(t, srv, ev)
	err := n.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "node loop's server is nerve's own endpoint of node g") || !strings.Contains(err.Error(), "`nerve node rm loop`") {
		t.Fatalf("Start = %v; want the refusal naming the node", err)
	}
	if n.State() != node.Error {
		t.Errorf("state %v, want ERROR", n.State())
	}
}

// The chain of calls in ctx goes out in the request's _meta, where nerve's
// MCP endpoint reads it.
func TestCallChainSentInMeta(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "other", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chain"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		got := strings.Join(node.ChainFromMeta(req.Params.GetMeta()), ",")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: got}}}, nil, nil
	})
	ev := newEvents()
	n := serverNode(t, srv, ev)
	mustStart(t, n)
	t.Cleanup(func() { n.Stop(context.Background()) })
	ctx, err := node.WithCallChain(context.Background(), []string{"default/g", "default/loop"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.CallTool(ctx, &node.CallRequest{Tool: "chain"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "default/g,default/loop" {
		t.Errorf("the server saw chain %q", got)
	}
	res, err = n.CallTool(context.Background(), &node.CallRequest{Tool: "chain"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "" {
		t.Errorf("a call outside any chain sent %q", got)
	}
}
