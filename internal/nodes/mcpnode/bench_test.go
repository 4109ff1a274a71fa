package mcpnode

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// BenchmarkCallOverhead compares one echo call through the node with the
// same call on a raw Go SDK client session, both over an in-memory
// transport to the same server. Target: node ≤ raw + 10 %.
//
// The node sends every call a progress token (so the server may report
// progress, which also keeps a long call alive); raw-sdk-progress sends one
// too, so node minus raw-sdk-progress is what the node itself costs, and
// raw-sdk-progress minus raw-sdk is what the token costs the server (which
// here runs in the same process and is counted).
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	raw := func(b *testing.B, progress bool, version string) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := newTestServer().Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := json.RawMessage(`{"text":"hi"}`)
		b.ReportAllocs()
		cpu := testutil.CPUMeter()
		var seq int64
		for b.Loop() {
			p := &mcp.CallToolParams{Name: "echo", Arguments: args}
			if progress {
				seq++
				p.SetProgressToken("raw-" + strconv.FormatInt(seq, 10))
			}
			if _, err := cs.CallTool(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		cpu(b)
	}
	b.Run("raw-sdk", func(b *testing.B) { raw(b, false, LegacyProtocol) })
	b.Run("raw-sdk-progress", func(b *testing.B) { raw(b, true, LegacyProtocol) })
	b.Run("node", func(b *testing.B) { nodeCalls(b, LegacyProtocol) })
	// MCP 2026-07-28: every request carries its _meta (the protocol
	// version, the client's name and capabilities), which the server
	// reads; the node negotiates it with a server that speaks it.
	b.Run("raw-sdk-progress-2026", func(b *testing.B) { raw(b, true, ModernProtocol) })
	b.Run("node-2026", func(b *testing.B) { nodeCalls(b, ProtocolAuto) })
}

// nodeCalls is BenchmarkCallOverhead's echo call through a node of
// protocol version (or auto) on the in-memory test server.
func nodeCalls(b *testing.B, version string) {
	ctx := context.Background()
	{
		n, err := newNode(node.Spec{ID: "bench", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://x.invalid/","protocol":"` + version + `"}`)}, node.Env{}, inMemory(b))
		if err != nil {
			b.Fatal(err)
		}
		mustStart(b, n)
		req := &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}
		b.ReportAllocs()
		cpu := testutil.CPUMeter()
		for b.Loop() {
			if _, err := n.CallTool(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		cpu(b)
	}
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
