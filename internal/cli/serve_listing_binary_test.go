//go:build unix

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryServeListsStartingNodes: `nerve mcp serve` started by a client
// right after the daemon (which restores the session and starts its nodes
// in the background) lists every node's tools, not only those of the nodes
// already READY. Before, tools/list answered with the one or two that were
// up while the slow servers were STARTING.
func TestBinaryServeListsStartingNodes(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "identity", "echo")
	for _, id := range []string{"slow1", "slow2", "slow3"} {
		n.Must("node", "add", "mcp", id, "--", server, "--start-delay", "1500ms")
	}
	n.Must("daemon", "stop")

	// The client starts nerve mcp serve, which starts the daemon.
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, tl := range res.Tools {
		node, _, _ := strings.Cut(tl.Name, ".")
		per[node]++
	}
	for _, id := range []string{"echo", "slow1", "slow2", "slow3"} {
		if per[id] == 0 {
			t.Errorf("tools/list right after the daemon started lacks node %s: %v", id, per)
		}
	}
}
