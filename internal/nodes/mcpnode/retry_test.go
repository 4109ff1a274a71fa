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

	"github.com/nerve-dev/nerve/internal/httpretry"
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
	return newHiccupServerFor(t, `"tools/call"`, status, retryAfter, always)
}

// newHiccupServerFor is newHiccupServer turning away the messages that
// hold match (a method, quoted).
func newHiccupServerFor(t *testing.T, match string, status int, retryAfter string, always bool) *hiccupServer {
	t.Helper()
	h := &hiccupServer{}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(match)) {
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
	return httpNodeWith(t, url, "")
}

// httpNodeWith is httpNode with more options (JSON members, with a
// leading comma).
func httpNodeWith(t *testing.T, url, more string) *Node {
	t.Helper()
	spec := node.Spec{ID: "remote", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"` + url + `"` + more + `}`)}
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
		if a := s.turnedAway.Load(); a != httpretry.DefaultAttempts {
			t.Errorf("sent %d times, want %d", a, httpretry.DefaultAttempts)
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
		want := "the server answered HTTP 429 Too Many Requests and asked to wait 1h0m0s (Retry-After), longer than nerve waits; try again later"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("call error %v; want %q", err, want)
		}
		if a := s.turnedAway.Load(); a != 1 {
			t.Errorf("sent %d times, want 1", a)
		}
	})
}

// TestHTTPRetrySettings: the node's retry option sets the tries in all
// and the waits.
func TestHTTPRetrySettings(t *testing.T) {
	s := newHiccupServer(t, http.StatusServiceUnavailable, "", true)
	n := httpNodeWith(t, s.URL, `,"retry":{"attempts":5,"base":"1ms","max":"2ms"}`)
	_, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if want := "503 Service Unavailable 5 times in a row"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("call error %v; want %q", err, want)
	}
	if a := s.turnedAway.Load(); a != 5 {
		t.Errorf("sent %d times, want 5", a)
	}
}

// TestHTTPGatewayErrors: a 502 or 504 comes from a gateway that got no
// answer from the server, which may have run the message. A tools/call is
// not sent again — the call fails saying it may have run — but a listing
// is: the node starts.
func TestHTTPGatewayErrors(t *testing.T) {
	for _, status := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			s := newHiccupServer(t, status, "", false)
			n := httpNodeWith(t, s.URL, `,"retry":{"base":"1ms"}`)
			_, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
			if want := "nerve did not send it again, as it may have run"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("call error %v; want %q", err, want)
			}
			if a, r := s.turnedAway.Load(), s.run.Load(); a != 1 || r != 0 {
				t.Errorf("turned away %d, run %d; want 1 and 0 (sent once)", a, r)
			}
			if st := n.State(); st != node.Ready {
				t.Errorf("node is %s, want READY", st)
			}
			lists := newHiccupServerFor(t, `"tools/list"`, status, "", false)
			n = httpNodeWith(t, lists.URL, `,"retry":{"base":"1ms"}`)
			if n.State() != node.Ready || lists.turnedAway.Load() != 1 {
				t.Errorf("a tools/list turned away once: node %s, turned away %d; want READY after a retry", n.State(), lists.turnedAway.Load())
			}
		})
	}
}

func TestCodeWords(t *testing.T) {
	for code, want := range map[int64]string{-32601: "method not found", -32602: "invalid params", -32005: "rejected by transport", -32050: "a server error the server defines itself", 7: ""} {
		if got := codeWords(code); !strings.Contains(got, want) || (want == "" && got != "") {
			t.Errorf("codeWords(%d) = %q, want %q", code, got, want)
		}
	}
}
