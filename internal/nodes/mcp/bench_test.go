package mcpnode

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// BenchmarkCallOverhead compares one echo call through the node with the
// same call on a raw Go SDK client session, both over an in-memory
// transport to the same server. Target: node ≤ raw + 10 %.
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	b.Run("raw-sdk", func(b *testing.B) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := newTestServer().Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := json.RawMessage(`{"text":"hi"}`)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("node", func(b *testing.B) {
		n, err := newNode(node.Spec{ID: "bench", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://x.invalid/"}`)}, node.Env{}, inMemory(b))
		if err != nil {
			b.Fatal(err)
		}
		mustStart(b, n)
		req := &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := n.CallTool(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConnectStdio measures Start of a node whose server is a Go SDK
// server on stdio (this test binary in helper mode): fork/exec, initialize,
// and listing tools, resources and prompts. Target ≤ 15 ms.
func BenchmarkConnectStdio(b *testing.B) {
	ctx := context.Background()
	n, err := newNode(stdioSpec("conn", helperCommand(b, "server")), node.Env{}, defaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := n.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		n.Stop(ctx)
		b.StartTimer()
	}
}

// BenchmarkConcurrentCalls runs 8 calls at once to a tool that takes 20 ms;
// compare with one call. Target: 8 concurrent ≤ 2× one.
func BenchmarkConcurrentCalls(b *testing.B) {
	ctx := context.Background()
	n, err := newNode(stdioSpec("conc", helperCommand(b, "server")), node.Env{}, defaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	mustStart(b, n)
	args := json.RawMessage(`{"steps":1,"ms":20}`)
	for _, width := range []int{1, 8} {
		b.Run(map[int]string{1: "one", 8: "eight"}[width], func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for range width {
					wg.Go(func() {
						if _, err := n.CallTool(ctx, &node.CallRequest{Tool: "slow", Arguments: args}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}

// BenchmarkStopNodeServer measures Stop of a node running the Node.js
// everything server (close stdin, short wait, SIGTERM to the group).
// Target ≤ 500 ms.
func BenchmarkStopNodeServer(b *testing.B) {
	ctx := context.Background()
	n, err := newNode(stdioSpec("stop", npmfix.ServerEverything(b)), node.Env{}, defaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		if err := n.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := n.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
