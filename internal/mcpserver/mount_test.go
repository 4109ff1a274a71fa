package mcpserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A mount is served behind the endpoint's guards: a loopback Host, no
// foreign Origin, its own credentials (401, the connection closed
// without them); with them its connection counts as authenticated.
func TestMountGuards(t *testing.T) {
	s := newSession(t)
	var reached atomic.Int32
	ep := startEndpointWith(t, s, func(o *EndpointOptions) {
		o.Mounts = []Mount{{
			Prefix:     "/ui/",
			Handler:    http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1); io.WriteString(w, "ui "+r.URL.Path) }),
			Authorized: func(r *http.Request) bool { return r.Header.Get("X-Pass") == "yes" },
			Refused:    "use the pass",
		}}
	})
	addr := ep.Addr()
	get := func(host, path string, hdr map[string]string) (*http.Response, string, net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b), c, br
	}
	pass := map[string]string{"X-Pass": "yes"}

	if resp, body, _, _ := get(addr, "/ui/x", pass); resp.StatusCode != http.StatusOK || body != "ui /ui/x" {
		t.Fatalf("with its credentials: %d %q", resp.StatusCode, body)
	}
	if resp, _, _, _ := get(addr, "/ui", pass); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d to %q, want a redirect to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for name, c := range map[string]struct {
		host string
		hdr  map[string]string
		want int
	}{
		"a rebinding Host": {"evil.example", pass, http.StatusForbidden},
		"a foreign Origin": {addr, map[string]string{"X-Pass": "yes", "Origin": "https://evil.example"}, http.StatusForbidden},
		"no credentials":   {addr, nil, http.StatusUnauthorized},
	} {
		resp, body, conn, br := get(c.host, "/ui/", c.hdr)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %q, want %d", name, resp.StatusCode, body, c.want)
		}
		if c.want == http.StatusUnauthorized && !strings.Contains(body, "use the pass") {
			t.Errorf("%s: the 401 reads %q, want the mount's Refused", name, body)
		}
		if !closedByServer(conn, br, 5*time.Second) {
			t.Errorf("%s: the refused connection stayed open", name)
		}
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("the handler was reached %d times, want once (the refused requests never)", n)
	}
	// The MCP endpoint beside it still wants its own token.
	if resp, _, _, _ := get(addr, "/mcp/test", pass); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("/mcp/test with the mount's credentials: %d, want 401 Bearer", resp.StatusCode)
	}
	// An authorized request marks its connection: it no longer counts
	// among the unauthenticated (limit.go).
	before := func() int { _, u := ep.ln.counts(); return u }()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/ui/", nil)
	req.Header.Set("X-Pass", "yes")
	req.Write(c)
	if resp, err := http.ReadResponse(bufio.NewReader(c), req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	if _, u := ep.ln.counts(); u > before {
		t.Errorf("an authorized connection counts as unauthenticated (%d, before %d)", u, before)
	}
}

func TestCheckMounts(t *testing.T) {
	h := http.NotFoundHandler()
	ok := func(*http.Request) bool { return true }
	for _, m := range []Mount{
		{Prefix: "/ui", Handler: h, Authorized: ok},
		{Prefix: "/mcp/", Handler: h, Authorized: ok},
		{Prefix: "/", Handler: h, Authorized: ok},
		{Prefix: "/ui/", Handler: h},
	} {
		if err := checkMounts([]Mount{m}); err == nil {
			t.Errorf("the mount at %q (authorized %v) was accepted", m.Prefix, m.Authorized != nil)
		}
	}
	if err := checkMounts([]Mount{{Prefix: "/ui/", Handler: h, Authorized: ok}}); err != nil {
		t.Error(err)
	}
}
