package mcpnode

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestServerEverythingOverHTTP runs server-everything over legacy SSE and
// streamable HTTP: calls, progress, and a call after a pause longer than the
// start timeout, each twice in a row. The SSE stream was bound to the start
// timeout's context, so an SSE node went ERROR right after start.
func TestServerEverythingOverHTTP(t *testing.T) {
	for _, mode := range []string{"sse", "streamableHttp"} {
		t.Run(mode, func(t *testing.T) {
			srv := npmfix.ServerEverythingHTTP(t, mode)
			transport := map[string]string{"sse": "sse", "streamableHttp": "http"}[mode]
			opts, _ := json.Marshal(map[string]any{"transport": transport, "url": srv.URL})
			cfg := defaultConfig()
			// Short, so that the pause below outlasts it, but not so short
			// that a loaded machine misses it (1 s failed beside a CPU hog).
			cfg.startTimeout = 3 * time.Second
			for round := 1; round <= 2; round++ {
				n, err := newNode(node.Spec{ID: "evs", Kind: Kind, Options: opts}, node.Env{}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				mustStart(t, n)
				for i := 0; i < 2; i++ {
					if got := text(t, callOK(t, n, "echo", `{"message":"hello"}`, nil)); !strings.Contains(got, "hello") {
						t.Errorf("round %d: echo = %q", round, got)
					}
				}
				var mu sync.Mutex
				var steps []float64
				callOK(t, n, "trigger-long-running-operation", `{"duration":1,"steps":4}`, func(e node.CallEvent) {
					if e.Kind == node.EventProgress {
						mu.Lock()
						steps = append(steps, e.Progress)
						mu.Unlock()
					}
				})
				mu.Lock()
				// Over HTTP the last notification may lose the race with the
				// result (they travel on different streams); the rest arrive.
				if len(steps) < 3 {
					t.Errorf("round %d: progress = %v, want at least 3 of 4 notifications", round, steps)
				}
				mu.Unlock()
				// A pause longer than the start timeout: the point of the
				// test is that time passes, so this sleep waits for nothing.
				time.Sleep(cfg.startTimeout + 500*time.Millisecond)
				if n.State() != node.Ready {
					t.Fatalf("round %d: after a pause the node is %s: %s", round, n.State(), n.Info().Error)
				}
				if got := text(t, callOK(t, n, "echo", `{"message":"again"}`, nil)); !strings.Contains(got, "again") {
					t.Errorf("round %d: echo after a pause = %q", round, got)
				}
				n.Stop(t.Context())
			}
		})
	}
}

// TestHTTPServerDownAndBack stops a real streamable-HTTP server under a
// READY node and starts it again on the same port: while it is down a call
// says "connection refused at URL"; once it is back the next call works
// without a restart by hand (the server forgot nerve's session, so nerve
// reconnects). Before, the call said "the server refused the call (-32005)"
// and the node stayed ERROR on "Bad Request".
func TestHTTPServerDownAndBack(t *testing.T) {
	srv := npmfix.ServerEverythingHTTP(t, "streamableHttp")
	opts, _ := json.Marshal(map[string]any{"transport": "http", "url": srv.URL})
	n, err := newNode(node.Spec{ID: "evh", Kind: Kind, Options: opts}, node.Env{}, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	callOK(t, n, "echo", `{"message":"before"}`, nil)

	// Restarted while idle: the next call reconnects and runs.
	srv.Stop()
	srv.Start()
	if got := text(t, callOK(t, n, "echo", `{"message":"after a server restart"}`, nil)); !strings.Contains(got, "after a server restart") {
		t.Errorf("echo after the server restarted = %q", got)
	}

	// Down: a clear message, twice (the second call tries to reconnect).
	srv.Stop()
	for i := 0; i < 2; i++ {
		_, err := n.CallTool(t.Context(), &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"message":"x"}`)})
		// "connection refused at URL", or — when the client's kept-alive
		// connection meets the dying server — "the connection was reset at
		// URL" / "the server closed the connection at URL".
		if err == nil || !strings.Contains(err.Error(), " at "+srv.URL+": is the server running?") {
			t.Errorf("call %d while the server is down: %v; want connection refused at %s", i+1, err, srv.URL)
		}
	}
	if st := n.State(); st != node.Error {
		t.Errorf("state while the server is down = %s, want ERROR", st)
	}
	// Back: the next call reconnects.
	srv.Start()
	if got := text(t, callOK(t, n, "echo", `{"message":"back"}`, nil)); !strings.Contains(got, "back") {
		t.Errorf("echo once the server is back = %q", got)
	}
	if st := n.State(); st != node.Ready {
		t.Errorf("state once the server is back = %s", st)
	}
}
