package mcpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// vanishing dials connections it can cut all at once, after which it dials
// no more: a client process that died without ending its MCP session.
type vanishing struct {
	mu    sync.Mutex
	conns []net.Conn
	gone  bool
}

func (v *vanishing) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.gone {
		return nil, errors.New("this client is gone")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		v.conns = append(v.conns, c)
	}
	return c, err
}

func (v *vanishing) vanish() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gone = true
	for _, c := range v.conns {
		c.Close()
	}
}

// connectVanishing connects an MCP client over HTTP whose connections
// vanish() cuts.
func connectVanishing(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, *vanishing) {
	t.Helper()
	v := &vanishing{}
	tr := &http.Transport{DialContext: v.dial}
	c := mcp.NewClient(&mcp.Implementation{Name: "vanishing", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: authed{token: token, next: tr}},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close(); tr.CloseIdleConnections() })
	return cs, v
}

type authed struct {
	token string
	next  http.RoundTripper
}

func (a authed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return a.next.RoundTrip(r)
}

// TestHTTPGoneClientIsNotAsked: a client of /mcp/SESSION/node/NODE that
// goes away without ending its MCP session is no longer sent the node's
// sampling requests: another caller's call that needs sampling is declined
// at once instead of waiting for the request's timeout (issue 22, item 4).
func TestHTTPGoneClientIsNotAsked(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	ep := startEndpoint(t, s)
	cs, v := connectVanishing(t, ep.NodeURL("test", "fx"), ep.Token(), &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "yes"}}, nil
		},
	})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "there?"}})
	if err != nil || !strings.Contains(resultText(res), "m said: yes") {
		t.Fatalf("sampling through the HTTP client: %v %s", err, mustJSON(res))
	}
	ep.h.mu.Lock()
	for _, hs := range ep.h.servers {
		hs.uses.mu.Lock()
		for id, su := range hs.uses.m {
			if len(su.gone) != 0 {
				t.Errorf("session %s keeps %d watchers of a request that ended", id, len(su.gone))
			}
		}
		hs.uses.mu.Unlock()
	}
	ep.h.mu.Unlock()
	v.vanish()
	// Asking a client that is gone would wait for the hook's cap (10
	// minutes); the decline comes well within this deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// What every goroutine waits on 20 s in, said only if the call hangs:
	// this test has failed 1 time in 30 beside two CPU hogs, not since.
	var stacks strings.Builder
	dumped := make(chan struct{})
	dump := time.AfterFunc(20*time.Second, func() {
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		close(dumped)
	})
	res, err = s.Call(ctx, "fx", &node.CallRequest{Tool: "sample", Arguments: []byte(`{"prompt":"anyone?"}`)})
	if ctx.Err() != nil {
		if !dump.Stop() {
			<-dumped
		}
		t.Fatalf("a call needing sampling waited for a client that is gone: %v\ngoroutines 20 s in:\n%s", err, stacks.String())
	}
	dump.Stop()
	if err == nil && !res.IsError {
		t.Fatalf("sampling answered %s with its client gone", mustJSON(res))
	}
}

// initSession opens an MCP session with a bare initialize (no event
// stream, as a client that then goes away) and returns its id.
func initSession(t *testing.T, ep *Endpoint, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ep.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get(sessionHeader)
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, id)
	}
	return id
}

// sessionAlive pings session id and reports whether the endpoint knows it.
func sessionAlive(t *testing.T, ep *Endpoint, url, id string) bool {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ep.Token())
	req.Header.Set(sessionHeader, id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	t.Fatalf("ping of session %s: status %d", id, resp.StatusCode)
	return false
}

// TestHTTPAbandonedSessionsAreCapped: past MaxSessions, the endpoint closes
// the least recently used sessions that have no stream open; a client with
// its event stream open keeps its session however old it is.
func TestHTTPAbandonedSessionsAreCapped(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	const max = 5
	ep := startEndpointWith(t, s, func(o *EndpointOptions) { o.MaxSessions = max })
	url := ep.URL("test")
	live := connectHTTP(t, url, ep.Token(), nil) // the oldest, with its stream open
	waitStreams(t, ep, 1)
	var ids []string
	for range 3 * max {
		ids = append(ids, initSession(t, ep, url))
	}
	for i, id := range ids {
		// The newest max-1 stay (the live client holds a place too).
		want := i >= len(ids)-(max-1)
		if got := sessionAlive(t, ep, url, id); got != want {
			t.Errorf("session %d of %d alive = %v, want %v", i+1, len(ids), got, want)
		}
	}
	res, err := live.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "still"}})
	if err != nil || resultText(res) != "still" {
		t.Errorf("the client with its stream open lost its session: %v %s", err, mustJSON(res))
	}
}

// TestHTTPIdleSessionsClose: a session with no stream and no request for
// SessionIdle is closed; a client with its stream open is kept.
func TestHTTPIdleSessionsClose(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	ep := startEndpointWith(t, s, func(o *EndpointOptions) { o.SessionIdle = 200 * time.Millisecond })
	url := ep.URL("test")
	live := connectHTTP(t, url, ep.Token(), nil)
	waitStreams(t, ep, 1)
	id := initSession(t, ep, url)
	deadline := time.Now().Add(10 * time.Second)
	for sessionOpen(ep, id) {
		if time.Now().After(deadline) {
			t.Fatal("a session with no stream was kept 10 s past SessionIdle (200ms)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sessionAlive(t, ep, url, id) {
		t.Fatal("the endpoint still answers a session it closed")
	}
	time.Sleep(400 * time.Millisecond) // two SessionIdle more: the live one must stay
	res, err := live.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "still"}})
	if err != nil || resultText(res) != "still" {
		t.Errorf("the client with its stream open lost its session: %v %s", err, mustJSON(res))
	}
}

// waitStreams waits until the endpoint's sessions have n event streams open.
func waitStreams(t *testing.T, ep *Endpoint, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		ep.h.mu.Lock()
		for _, hs := range ep.h.servers {
			hs.uses.mu.Lock()
			for _, su := range hs.uses.m {
				got += su.streams
			}
			hs.uses.mu.Unlock()
		}
		ep.h.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d event streams open, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessionOpen reports whether the endpoint still has session id, without
// using it.
func sessionOpen(ep *Endpoint, id string) bool {
	ep.h.mu.Lock()
	defer ep.h.mu.Unlock()
	for _, hs := range ep.h.servers {
		for ss := range hs.s.MCP().Sessions() {
			if ss.ID() == id {
				return true
			}
		}
	}
	return false
}

// TestHTTPGoneClientPassesToTheNext: when the HTTP client that attached
// last to a node is gone, the node's sampling requests go to the client
// that attached before it (here `nerve mcp serve --node`'s), not nowhere.
func TestHTTPGoneClientPassesToTheNext(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	answer := func(who string) *mcp.ClientOptions {
		return &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: who, Role: "assistant", Content: &mcp.TextContent{Text: "here"}}, nil
		}}
	}
	connect(t, serve(t, NewSessionBackend(s), &Options{Node: "fx"}), answer("stdio"))
	ep := startEndpoint(t, s)
	_, v := connectVanishing(t, ep.NodeURL("test", "fx"), ep.Token(), answer("http"))
	sample := func(want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res, err := s.Call(ctx, "fx", &node.CallRequest{Tool: "sample", Arguments: []byte(`{"prompt":"who?"}`)})
		if err != nil || !strings.Contains(resultText(res), want+" said: here") {
			t.Fatalf("sampling: %v %s, want %q to answer", err, mustJSON(res), want)
		}
	}
	waitStreams(t, ep, 1)
	sample("http")
	v.vanish()
	waitStreams(t, ep, 0)
	sample("stdio")
}

// TestHTTPCallerIsTheClient: a call through the endpoint names its MCP
// client (initialize clientInfo) as the caller, for the call log.
func TestHTTPCallerIsTheClient(t *testing.T) {
	callers := make(chan node.Caller, 4)
	s := session.New("test", all.Registry(nil), &session.Options{Dir: t.TempDir(), OnCall: func(_ context.Context, c *session.CallInfo) {
		callers <- c.Caller
	}})
	t.Cleanup(func() { s.Close(context.Background()) })
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	ep := startEndpoint(t, s)
	cs := connectHTTP(t, ep.URL("test"), ep.Token(), nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	want := node.Caller{Kind: node.CallerMCP, Name: "http-test", Via: "http"}
	if got := <-callers; got != want {
		t.Errorf("caller %+v, want %+v", got, want)
	}
}
