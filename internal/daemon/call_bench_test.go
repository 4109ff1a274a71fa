//go:build unix

package daemon

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// chatty is an identity node whose every call first reports 100 steps
// of progress.
type chatty struct{ node.Node }

func (c chatty) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	for i := range 100 {
		req.Emit(node.CallEvent{Kind: node.EventProgress, Progress: float64(i + 1), Total: 100, Message: "working"})
	}
	return c.Node.CallTool(ctx, req)
}

// BenchmarkCallEvents measures a call whose 100 progress events stream
// to a client over the Unix socket, which reads them all: the call
// route's cost per event (since issue 26 each stream writes through its
// own queue, so that a client that stops reading holds up no one).
func BenchmarkCallEvents(b *testing.B) {
	reg := testRegistry()
	reg.Register("chatty", func(spec node.Spec, env node.Env) (node.Node, error) {
		n, err := identity.New(spec, env)
		return chatty{n}, err
	})
	d, err := New(&Options{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close(context.Background()) })
	sock := filepath.Join(testutil.SocketDir(b), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-done })
	c := client.New(client.Options{Socket: sock})
	b.Cleanup(func() { c.Close() })
	s := c.Session(DefaultSession)
	if _, err := s.Add(context.Background(), node.Spec{ID: "c", Kind: "chatty"}); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		events := 0
		if _, err := s.Call(context.Background(), "c", "identity", args, func(l api.CallLine) { events++ }); err != nil {
			b.Fatal(err)
		}
		if events != 100 {
			b.Fatalf("%d events, want 100", events)
		}
	}
}
