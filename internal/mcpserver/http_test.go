package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// startEndpoint serves s (as session "test") on 127.0.0.1 until the end of
// the test.
func startEndpoint(t testing.TB, s *session.Session) *Endpoint {
	t.Helper()
	ep, err := StartEndpoint(&EndpointOptions{HTTPOptions: HTTPOptions{
		Token: NewToken(),
		Session: func(_ context.Context, name string) (*session.Session, error) {
			if name != s.Name() {
				return nil, fmt.Errorf("no session %q", name)
			}
			return s, nil
		},
		MaxBody: 1 << 20,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close(context.Background()) })
	return ep
}

// bearer adds the token to every request.
type bearer struct {
	token string
	host  string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.host != "" {
		r.Host = b.host
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t testing.TB, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token: token}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func TestHTTPGuards(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	ep := startEndpoint(t, s)
	url := ep.URL("test")
	for _, tc := range []struct {
		name   string
		token  string
		host   string
		origin string
		path   string
		body   string
		want   int
	}{
		{name: "no token", want: http.StatusUnauthorized},
		{name: "wrong token", token: "nope", want: http.StatusUnauthorized},
		{name: "wrong host", token: ep.Token(), host: "evil.example.com", want: http.StatusForbidden},
		{name: "wrong host, no token", host: "evil.example.com", want: http.StatusForbidden},
		{name: "foreign origin", token: ep.Token(), origin: "http://evil.example.com", want: http.StatusForbidden},
		{name: "body too large", token: ep.Token(), body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`, want: http.StatusRequestEntityTooLarge},
		{name: "no such session", token: ep.Token(), path: "/mcp/other", want: http.StatusNotFound},
		{name: "no such node", token: ep.Token(), path: "/mcp/test/node/ghost", want: http.StatusNotFound},
		{name: "local origin", token: ep.Token(), origin: "http://localhost:1234", want: http.StatusOK},
		{name: "ok", token: ep.Token(), want: http.StatusOK},
		{name: "ok localhost", token: ep.Token(), host: "localhost", want: http.StatusOK},
		{name: "ok node", token: ep.Token(), path: "/mcp/test/node/echo", want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := url
			if tc.path != "" {
				u = "http://" + ep.Addr() + tc.path
			}
			body := tc.body
			if body == "" {
				body = initBody
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestHTTPListChanged: a client connected over HTTP hears of a node added
// to the session and calls its tool.
func TestHTTPListChanged(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "a", Kind: "identity"})
	ep := startEndpoint(t, s)
	changed := make(chan struct{}, 16)
	cs := connectHTTP(t, ep.URL("test"), ep.Token(), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"a.identity"}) {
		t.Fatalf("tools = %v", got)
	}
	addNode(t, s, node.Spec{ID: "b", Kind: "identity"})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed over HTTP after adding a node")
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"a.identity", "b.identity"}) {
		t.Fatalf("tools after add = %v", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "b.identity", Arguments: map[string]any{"text": "over http"}})
	if err != nil || resultText(res) != "over http" {
		t.Fatalf("call: %v %s", err, mustJSON(res))
	}
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "mcp-token")
	tok, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	again, err := LoadOrCreateToken(path)
	if err != nil || again != tok {
		t.Errorf("second load = %q (%v), want the same token", again, err)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadOrCreateToken(path); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("a world-readable token file: err = %v, want a refusal", err)
	}
}

func TestStartEndpointRefusesNonLoopback(t *testing.T) {
	_, err := StartEndpoint(&EndpointOptions{Listen: "0.0.0.0:0", HTTPOptions: HTTPOptions{Token: "x", Session: func(context.Context, string) (*session.Session, error) { return nil, nil }}})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("err = %v, want a refusal naming loopback", err)
	}
}
