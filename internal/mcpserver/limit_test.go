package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// startEndpointWith serves s (as session "test") with opts changed by set.
func startEndpointWith(t testing.TB, s *session.Session, set func(*EndpointOptions)) *Endpoint {
	t.Helper()
	opts := &EndpointOptions{HTTPOptions: HTTPOptions{
		Token: NewToken(),
		Session: func(_ context.Context, name string) (*session.Session, error) {
			if name != s.Name() {
				return nil, fmt.Errorf("no session %q", name)
			}
			return s, nil
		},
	}}
	set(opts)
	ep, err := StartEndpoint(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close(context.Background()) })
	return ep
}

// rawRequest writes an initialize request on c (with token, if set) and
// reads its answer.
func rawRequest(t *testing.T, c net.Conn, br *bufio.Reader, host, path, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+host+path, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := req.Write(c); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// closedByServer reports whether the server closes c within d.
func closedByServer(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestEndpointEndsRefusedConnections: a client that got its 401 (or 403)
// cannot keep the connection; one with the token keeps it until it has been
// idle for IdleTimeout.
func TestEndpointEndsRefusedConnections(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	ep := startEndpointWith(t, s, func(o *EndpointOptions) { o.IdleTimeout = 300 * time.Millisecond })
	for _, tc := range []struct {
		name, host, token string
		status            int
		closed            bool
	}{
		{name: "no token", host: ep.Addr(), status: http.StatusUnauthorized, closed: true},
		{name: "wrong token", host: ep.Addr(), token: "nope", status: http.StatusUnauthorized, closed: true},
		{name: "foreign host", host: "evil.example.com", token: ep.Token(), status: http.StatusForbidden, closed: true},
		{name: "token", host: ep.Addr(), token: ep.Token(), status: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ep.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			resp := rawRequest(t, c, br, tc.host, "/mcp/test", tc.token)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.closed {
				if !resp.Close || !closedByServer(c, br, 5*time.Second) {
					t.Errorf("after a %d the connection stays open (Connection: close sent: %v); want it closed", resp.StatusCode, resp.Close)
				}
				return
			}
			if closedByServer(c, br, 100*time.Millisecond) {
				t.Fatal("an authorized keep-alive connection was closed at once")
			}
			if !closedByServer(c, br, 5*time.Second) {
				t.Error("an idle keep-alive connection was kept past IdleTimeout (300ms)")
			}
		})
	}
}

// TestEndpointConnLimits floods the endpoint with idle connections from two
// addresses: it keeps no more unauthenticated ones than its limits (per
// local user on Linux, else per address, and in all), a client with the
// token still gets in and calls, and once every place is taken by
// authenticated connections a new one is refused.
func TestEndpointConnLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("opens hundreds of connections")
	}
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	limits := ConnLimits{Max: 24, MaxUnauth: 8, MaxUnauthPerHost: 5}
	ep := startEndpointWith(t, s, func(o *EndpointOptions) { o.Limits = limits })

	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	dial := func(from string) net.Conn {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ep.Addr())
		if err != nil {
			t.Fatalf("dialing from %s: %v", from, err)
		}
		return c
	}
	waitCounts := func(what string, ok func(total, unauth int) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			total, unauth := ep.ln.counts()
			if ok(total, unauth) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d connections, %d unauthenticated (limits %+v)", what, total, unauth, limits)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	const perAddr = 200
	for range perAddr {
		flood = append(flood, dial("127.0.0.1"))
	}
	waitCounts("200 idle connections from 127.0.0.1", func(total, unauth int) bool {
		return total == limits.MaxUnauthPerHost && unauth == limits.MaxUnauthPerHost
	})
	for range perAddr {
		flood = append(flood, dial("127.0.0.2"))
	}
	want := limits.MaxUnauth // two addresses
	if _, byUID := peerUID(flood[0]); byUID || runtime.GOOS == "linux" {
		want = limits.MaxUnauthPerHost // one user
	}
	waitCounts("and 200 from 127.0.0.2", func(total, unauth int) bool {
		return total == want && unauth == want
	})
	// The counts drop as an eviction begins; its close may land a moment
	// later on a loaded machine, so look again at the ones still open.
	evicted, open := 0, flood
	for deadline := time.Now().Add(10 * time.Second); evicted < 2*perAddr-want && time.Now().Before(deadline); {
		var still []net.Conn
		for _, c := range open {
			if closedByServer(c, bufio.NewReader(c), 20*time.Millisecond) {
				evicted++
			} else {
				still = append(still, c)
			}
		}
		open = still
	}
	if evicted != 2*perAddr-want {
		t.Errorf("%d of %d idle connections closed by the server, want %d", evicted, 2*perAddr, 2*perAddr-want)
	}

	// The owner's client gets in through the flood.
	cs := connectHTTP(t, ep.URL("test"), ep.Token(), nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "through"}})
	if err != nil || resultText(res) != "through" {
		t.Fatalf("a call with the token during the flood: %v %s", err, mustJSON(res))
	}

	// Authenticated connections fill every place: the next is refused.
	var authed []net.Conn
	defer func() {
		for _, c := range authed {
			c.Close()
		}
	}()
	for {
		total, unauth := ep.ln.counts()
		if total-unauth >= limits.Max {
			break
		}
		c := dial("127.0.0.1")
		authed = append(authed, c)
		if resp := rawRequest(t, c, bufio.NewReader(c), ep.Addr(), "/mcp/test", ep.Token()); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d with the token", resp.StatusCode)
		}
		if len(authed) > limits.Max {
			t.Fatalf("%d authenticated connections kept, limit %d", len(authed), limits.Max)
		}
	}
	c := dial("127.0.0.1")
	defer c.Close()
	if !closedByServer(c, bufio.NewReader(c), 5*time.Second) {
		t.Errorf("a connection over the limit of %d was kept", limits.Max)
	}
	if ep.ln.refused.Load() == 0 {
		t.Error("refused = 0, want the connection over the limit counted")
	}
}

// TestEndpointBodyTimeout: a request whose body stalls is cut after
// ReadTimeout, but a call whose answer streams for longer than that is
// not: the deadline covers reading the body only.
func TestEndpointBodyTimeout(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "sh", Kind: "bash"})
	ep := startEndpointWith(t, s, func(o *EndpointOptions) { o.ReadTimeout = 300 * time.Millisecond })

	c, err := net.Dial("tcp", ep.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp/test HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"", ep.Addr(), ep.Token())
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if resp, err := http.ReadResponse(br, nil); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Fatalf("a stalled body was answered %d", resp.StatusCode)
		}
		t.Logf("a stalled body: %d after %v", resp.StatusCode, time.Since(start))
	}
	if !closedByServer(c, br, 10*time.Second) {
		t.Fatalf("a stalled body kept its connection %v", time.Since(start))
	}

	// The answer's event stream outlives the deadline: read on the POST
	// itself, since an SDK client would resume a cut stream unnoticed.
	url := ep.URL("test")
	id := initSession(t, ep, url)
	post := func(body string) string {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+ep.Token())
		req.Header.Set(sessionHeader, id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading the answer: %v (after %s)", err, data)
		}
		return string(data)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sh.bash","arguments":{"command":"sleep 1; echo slept"}}}`); !strings.Contains(got, "slept") {
		t.Fatalf("a call answering after 1 s (ReadTimeout 300ms) was cut: %q", got)
	}
}

// TestPeerUID: the endpoint knows which local user opened a connection.
func TestPeerUID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	uid, ok := peerUID(s)
	if runtime.GOOS != "linux" {
		if ok {
			t.Errorf("peerUID = %d outside Linux", uid)
		}
		return
	}
	if !ok || uid != uint32(os.Getuid()) {
		t.Errorf("peerUID = %d, %v; want this process's uid %d", uid, ok, os.Getuid())
	}
}

// TestEvictionSparesTheQuiet: over the bound of unauthenticated
// connections, the one evicted is the oldest of the remote that has the
// most, not the oldest of all: a flood evicts its own connections, and
// another user's one connection stays.
func TestEvictionSparesTheQuiet(t *testing.T) {
	l := newLimitListener(nil, ConnLimits{Max: 100, MaxUnauth: 4, MaxUnauthPerHost: 4}, zap.NewNop())
	for _, h := range []string{"uid 1000", "uid 65534", "uid 65534", "uid 65534"} {
		l.unauth = append(l.unauth, &limitConn{host: h})
		l.perHost[h]++
		l.total++
	}
	l.mu.Lock()
	got := l.oldestOfBusiestLocked()
	l.mu.Unlock()
	if got != l.unauth[1] {
		t.Errorf("evicted %s's connection, want the oldest of uid 65534's", got.host)
	}
	if h, n := l.busiest(); h != "uid 65534" || n != 3 {
		t.Errorf("busiest = %s (%d), want uid 65534 (3)", h, n)
	}
}
