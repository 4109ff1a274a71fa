package mcpnode

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// remoteServer serves newTestServer's tools over transport (sse or http)
// on addr until stopped; stop closes the listener and every connection, as a
// server that was killed.
func remoteServer(t *testing.T, transport, addr string) (stop func()) {
	t.Helper()
	var ln net.Listener
	var err error
	// The port was just freed; a moment may pass before it can be bound.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listening on %s again: %v", addr, err)
	}
	srv := newTestServer()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if transport == "sse" {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(ln) }()
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			hs.Close()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestRemoteServerBackReconnects: an sse or http node whose server was
// killed and started again on the same address answers the next call
// without a restart by hand (issue 22, item 6). Before, once a call had
// tried to reconnect while the server was down, every later call failed
// with `node "evsse" is ERROR` until `nerve node restart`: the session
// asks the node for its tools before the call, and an ERROR node without a
// connection had none, so the call never came to reconnect.
func TestRemoteServerBackReconnects(t *testing.T) {
	for _, transport := range []string{"sse", "http"} {
		t.Run(transport, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			stop := remoteServer(t, transport, addr)

			opts, _ := json.Marshal(map[string]any{"transport": transport, "url": "http://" + addr + "/"})
			s := faultSession(t, faultConfig())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := s.Add(ctx, node.Spec{ID: "ev" + transport, Kind: Kind, Options: opts})
			if err != nil {
				t.Fatal(err)
			}
			call := func() (string, error) { return echo(ctx, s, "ev"+transport, "hi") }
			if got, err := call(); err != nil || got != "hi" {
				t.Fatalf("first call: %q, %v", got, err)
			}

			stop()
			if transport == "sse" {
				// The watcher sees the SSE stream end.
				testutil.WaitFor(t, 10*time.Second, func() bool { return n.State() == node.Error }, "the node to see its server gone")
			}
			// Each call while the server is down tries to reconnect and
			// says why it could not.
			for i := range 2 {
				_, err = call()
				if err == nil || !strings.Contains(err.Error(), "is the server running?") || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("call %d while the server is down: %v, want it to say the server is not running", i+1, err)
				}
				if strings.Contains(err.Error(), "nerve node restart") {
					t.Errorf("call %d while the server is down asks for a restart by hand: %v", i+1, err)
				}
			}

			remoteServer(t, transport, addr)
			for i := range 2 {
				if got, err := call(); err != nil || got != "hi" {
					t.Fatalf("call %d after the server came back: %q, %v (node %s: %s)", i+1, got, err, n.State(), n.Info().Error)
				}
			}
			if st := n.State(); st != node.Ready {
				t.Errorf("node is %s, want READY", st)
			}
		})
	}
}
