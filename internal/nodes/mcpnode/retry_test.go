package mcpnode

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// hiccupServer is a real MCP server (the Go SDK's streamable handler)
// behind a front that turns tools/call away with status, once (or, with
// always, every time), adding Retry-After when retryAfter is set. Only a
// call that reaches the MCP server counts as run.
type hiccupServer struct {
	*httptest.Server
	turnedAway, run atomic.Int32
}

func newHiccupServer(t *testing.T, status int, retryAfter string, always bool) *hiccupServer {
	t.Helper()
	h := &hiccupServer{}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			if always || h.turnedAway.Load() == 0 {
				h.turnedAway.Add(1)
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				http.Error(w, "busy", status)
				return
			}
			h.run.Add(1)
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

func httpNode(t *testing.T, url string) *Node {
	t.Helper()
	spec := node.Spec{ID: "remote", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"` + url + `"}`)}
	n, err := newNode(spec, node.Env{}, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	return n
}

// TestHTTPRetriesTurnedAwayCall: a call the server answers with 503 or 429
// once — with or without Retry-After — is sent again and runs once; a
// server that keeps answering 503 fails the call after 3 tries, naming the
// status, and the node stays READY; a Retry-After longer than nerve waits
// fails at once, saying so.
func TestHTTPRetriesTurnedAwayCall(t *testing.T) {
	ctx := context.Background()
	call := func(n *Node) (*mcp.CallToolResult, error) {
		return n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	}
	for _, tt := range []struct {
		name       string
		status     int
		retryAfter string
	}{
		{"503 once", http.StatusServiceUnavailable, ""},
		{"503 once, Retry-After 1", http.StatusServiceUnavailable, "1"},
		{"429 once, Retry-After as a date", http.StatusTooManyRequests, time.Now().Add(time.Second).UTC().Format(http.TimeFormat)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newHiccupServer(t, tt.status, tt.retryAfter, false)
			n := httpNode(t, s.URL)
			res, err := call(n)
			if err != nil || text(t, res) != "hi" {
				t.Fatalf("call: %v, %v; want it retried and answered", res, err)
			}
			if a, r := s.turnedAway.Load(), s.run.Load(); a != 1 || r != 1 {
				t.Errorf("turned away %d, run %d; want 1 and 1", a, r)
			}
		})
	}
	t.Run("503 always", func(t *testing.T) {
		t.Parallel()
		s := newHiccupServer(t, http.StatusServiceUnavailable, "", true)
		n := httpNode(t, s.URL)
		_, err := call(n)
		want := `tool "echo" on node "remote" was not run: the server answered HTTP 503 Service Unavailable 3 times in a row`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("call error %v; want %q", err, want)
		}
		if a := s.turnedAway.Load(); a != retryTries {
			t.Errorf("sent %d times, want %d", a, retryTries)
		}
		if st := n.State(); st != node.Ready {
			t.Errorf("node is %s after a turned-away call, want READY", st)
		}
	})
	t.Run("429 with a long Retry-After", func(t *testing.T) {
		t.Parallel()
		s := newHiccupServer(t, http.StatusTooManyRequests, "3600", true)
		n := httpNode(t, s.URL)
		_, err := call(n)
		want := "the server answered HTTP 429 Too Many Requests and asked to wait 1h0m0s (Retry-After), longer than nerve waits within one call"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("call error %v; want %q", err, want)
		}
		if a := s.turnedAway.Load(); a != 1 {
			t.Errorf("sent %d times, want 1", a)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in    string
		want  time.Duration
		named bool
	}{
		{"", 0, false},
		{"5", 5 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
	} {
		got, named := retryAfter(tt.in, now)
		if got != tt.want || named != tt.named {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.in, got, named, tt.want, tt.named)
		}
	}
}

func TestCodeWords(t *testing.T) {
	for code, want := range map[int64]string{-32601: "method not found", -32602: "invalid params", -32005: "rejected by transport", -32050: "a server error the server defines itself", 7: ""} {
		if got := codeWords(code); !strings.Contains(got, want) || (want == "" && got != "") {
			t.Errorf("codeWords(%d) = %q, want %q", code, got, want)
		}
	}
}
