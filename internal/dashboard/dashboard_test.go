package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/nodes/graph"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// The dashboard on a real endpoint listener (mcpserver.Mount, as the
// daemon mounts it) over a session of identity nodes, a graph and a node
// whose calls wait for the test.

// held is an identity node whose calls wait until release is closed.
type held struct {
	*identity.Node
	release chan struct{}
}

func (h *held) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Node.CallTool(ctx, req)
}

type fixture struct {
	d       *Dashboard
	s       *session.Session
	base    string
	release chan struct{}

	// mu guards log: every call of the session, as the daemon's call
	// log gets it.
	mu  sync.Mutex
	log []*session.CallInfo
}

// calls returns the calls made so far.
func (f *fixture) calls() []*session.CallInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{release: make(chan struct{})}
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	reg.Register("held", func(spec node.Spec, env node.Env) (node.Node, error) {
		n, err := identity.New(spec, env)
		if err != nil {
			return nil, err
		}
		return &held{Node: n.(*identity.Node), release: f.release}, nil
	})
	reg.Register(graph.Kind, graph.New)
	f.s = session.New("default", reg, &session.Options{OnCall: func(_ context.Context, c *session.CallInfo) {
		f.mu.Lock()
		f.log = append(f.log, c)
		f.mu.Unlock()
		f.d.Called("default", c)
	}})
	t.Cleanup(func() { f.s.Close(context.Background()) })
	f.d = New(&Options{
		Session: func(ctx context.Context, name string) (*session.Session, error) {
			if name != "default" {
				return nil, fmt.Errorf("no session %q", name)
			}
			return f.s, nil
		},
		Hooks: Hooks{Steps: func(spec node.Spec) ([]Step, error) {
			var o graphlang.Options
			if err := spec.DecodeOptions(&o); err != nil {
				return nil, err
			}
			d, err := graphlang.Parse([]byte(o.Source))
			if err != nil {
				return nil, err
			}
			var steps []Step
			for _, s := range d.Steps {
				steps = append(steps, Step{ID: s.ID, Call: s.Call, Needs: s.Deps})
			}
			return steps, nil
		}},
		Version: "test",
	})
	ctx := context.Background()
	for _, spec := range []node.Spec{
		{ID: "echo", Kind: identity.Kind},
		{ID: "gate", Kind: "held"},
		{ID: "g", Kind: graph.Kind, Options: json.RawMessage(`{"source": "steps:\n  a: {call: echo.identity, args: {text: x}}\n  b: {call: gate.identity, args: {text: \"${steps.a.text}y\"}}\n  c: {call: echo.identity, args: {text: \"${steps.b.text}z\"}}\n"}`)},
	} {
		if _, err := f.s.Add(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	ep, err := mcpserver.StartEndpoint(&mcpserver.EndpointOptions{
		HTTPOptions: mcpserver.HTTPOptions{
			Token:   mcpserver.NewToken(),
			Session: func(context.Context, string) (*session.Session, error) { return f.s, nil },
		},
		Mounts: []mcpserver.Mount{{Prefix: Prefix, Handler: f.d, Authorized: f.d.Authorized, Refused: Refused}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.d.Close()
		ep.Close(context.Background())
	})
	f.base = ep.Base()
	return f
}

// browser is an HTTP client with a cookie jar that follows no redirect.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// visit opens the page with a fresh token and returns the browser and
// its CSRF token.
func (f *fixture) visit(t *testing.T) (*http.Client, string) {
	t.Helper()
	c := browser(t)
	link, _ := f.d.Link(f.base, "default")
	resp, _ := do(t, c, "GET", link, nil, "")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the token's address answered %d, want 303", resp.StatusCode)
	}
	resp, body := do(t, c, "GET", f.base+"/ui/api/hello", nil, "")
	var hi hello
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &hi) != nil || hi.CSRF == "" {
		t.Fatalf("hello answered %d %s", resp.StatusCode, body)
	}
	return c, hi.CSRF
}

func TestTokenBecomesCookieOnce(t *testing.T) {
	f := newFixture(t)
	c := browser(t)
	link, _ := f.d.Link(f.base, "default")

	resp, _ := do(t, c, "GET", link, nil, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/?session=default" {
		t.Fatalf("the token's address answered %d to %q, want 303 to /ui/?session=default", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/ui/"} {
		if !strings.Contains(ck, attr) {
			t.Errorf("the cookie %q lacks %s", ck, attr)
		}
	}
	resp, body := do(t, c, "GET", f.base+"/ui/?session=default", nil, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<script type="module" src="app.js">`) {
		t.Fatalf("the page answered %d:\n%s", resp.StatusCode, body)
	}
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := resp.Header.Get(h); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q…", h, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
		t.Errorf("the CSP %q must forbid framing and allow nothing unsafe", csp)
	}

	stranger := browser(t)
	for _, u := range []string{link, f.base + "/ui/", f.base + "/ui/app.js", f.base + "/ui/api/hello", f.base + "/ui/api/sessions/default/events"} {
		if resp, body := do(t, stranger, "GET", u, nil, ""); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "nerve ui") {
			t.Errorf("GET %s without the cookie (the token used) answered %d %q, want 401 naming `nerve ui`", u, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, c, "GET", f.base+"/ui/app.js", nil, ""); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestForeignHostOrSiteRefused(t *testing.T) {
	f := newFixture(t)
	c, _ := f.visit(t)
	for name, hdr := range map[string]map[string]string{
		"a rebinding Host":             {"Host": "evil.example:80"},
		"a foreign Origin":             {"Origin": "http://evil.example"},
		"a request of another site":    {"Sec-Fetch-Site": "cross-site"},
		"a request of another port":    {"Sec-Fetch-Site": "same-site"},
		"a navigation from outside":    {"Sec-Fetch-Site": "none"}, // only the page itself
		"a request of another process": {"Host": "nerve.local"},
	} {
		if resp, _ := do(t, c, "GET", f.base+"/ui/api/hello", hdr, ""); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
}

func TestActionsNeedOriginAndCSRF(t *testing.T) {
	f := newFixture(t)
	c, csrf := f.visit(t)
	stop := f.base + "/ui/api/sessions/default/nodes/echo/stop"
	good := map[string]string{"Origin": f.base, CSRFHeader: csrf, "Content-Type": "application/json"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	for name, c2 := range map[string]struct {
		hdr  map[string]string
		want int
	}{
		"no CSRF header":             {with(CSRFHeader, ""), http.StatusForbidden},
		"a wrong CSRF header":        {with(CSRFHeader, "0000"), http.StatusForbidden},
		"no Origin":                  {with("Origin", ""), http.StatusForbidden},
		"the Origin of another port": {with("Origin", "http://127.0.0.1:1"), http.StatusForbidden},
		"a form's content type":      {with("Content-Type", "application/x-www-form-urlencoded"), http.StatusUnsupportedMediaType},
	} {
		if resp, body := do(t, c, "POST", stop, c2.hdr, "{}"); resp.StatusCode != c2.want {
			t.Errorf("%s: %d %s, want %d", name, resp.StatusCode, body, c2.want)
		}
	}
	if info, _ := f.s.Info("echo"); info.State != node.Ready {
		t.Fatalf("a refused stop stopped echo: %s", info.State)
	}
	resp, body := do(t, c, "POST", stop, good, "{}")
	var v nodeView
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || v.State != node.Stopped {
		t.Fatalf("the stop answered %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, c, "POST", f.base+"/ui/api/sessions/default/nodes/echo/start", good, "{}"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"state":"READY"`) {
		t.Fatalf("the start answered %d %s", resp.StatusCode, body)
	}
	// A call, and its mistakes as the session words them.
	resp, body = do(t, c, "POST", f.base+"/ui/api/sessions/default/nodes/echo/call", good, `{"tool": "identity", "arguments": {"text": "hi"}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("the call answered %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, c, "POST", f.base+"/ui/api/sessions/default/nodes/echo/call", good, `{"tool": "identity", "arguments": {"txt": "hi"}}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "text") {
		t.Errorf("a call with a misspelt argument answered %d %s, want 400 naming it", resp.StatusCode, body)
	}
	if resp, _ := do(t, c, "POST", f.base+"/ui/api/sessions/default/nodes/echo/signin", good, "{}"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a sign-in without the hook answered %d, want 400", resp.StatusCode)
	}
}

func TestTokenAndVisitExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		tok, exp := g.mint()
		if !exp.Equal(time.Now().Add(tokenLife)) || !g.valid(tok) {
			t.Fatal("a fresh token is not valid for tokenLife")
		}
		time.Sleep(tokenLife)
		if g.valid(tok) {
			t.Error("a token is still valid after tokenLife")
		}
		if _, ok := g.redeem(tok); ok {
			t.Error("a token too old was redeemed")
		}
		tok, _ = g.mint()
		ck, ok := g.redeem(tok)
		if !ok {
			t.Fatal("a fresh token was not redeemed")
		}
		if _, again := g.redeem(tok); again {
			t.Error("a token was redeemed twice")
		}
		r := &http.Request{Host: "127.0.0.1:1", Header: http.Header{"Cookie": {"nerve-ui-1=" + ck}}}
		if _, ok := g.visit(r); !ok {
			t.Fatal("the visit's cookie is not let in")
		}
		r2 := &http.Request{Host: "127.0.0.1:2", Header: r.Header}
		if _, ok := g.visit(r2); ok {
			t.Error("the cookie of port 1 let a request to port 2 in")
		}
		time.Sleep(visitLife)
		if _, ok := g.visit(r); ok {
			t.Error("a visit is still let in after visitLife")
		}
		for range maxTokens + 10 {
			g.mint()
		}
		if len(g.tokens) > maxTokens {
			t.Errorf("%d tokens kept, the most is %d", len(g.tokens), maxTokens)
		}
	})
}

// sse reads a server-sent event stream.
type sse struct {
	r *bufio.Reader
}

func (s *sse) next(t *testing.T) (string, json.RawMessage) {
	t.Helper()
	var event string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			return event, json.RawMessage(strings.TrimPrefix(line, "data: "))
		}
	}
}

// until reads events until one named event satisfies ok.
func (s *sse) until(t *testing.T, event string, ok func(json.RawMessage) bool) json.RawMessage {
	t.Helper()
	for {
		ev, data := s.next(t)
		if ev == event && ok(data) {
			return data
		}
	}
}

func (f *fixture) stream(t *testing.T, c *http.Client) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", f.base+"/ui/api/sessions/default/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the event stream answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sse{r: bufio.NewReader(resp.Body)}
}

func TestEventStreamLive(t *testing.T) {
	f := newFixture(t)
	c, _ := f.visit(t)
	s := f.stream(t, c)
	var nodes []nodeView
	if ev, data := s.next(t); ev != "nodes" || json.Unmarshal(data, &nodes) != nil || len(nodes) != 3 {
		t.Fatalf("the stream began with %s %s, want the 3 nodes", ev, data)
	}
	ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerCLI})
	if _, err := f.s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text": "seen"}`)}); err != nil {
		t.Fatal(err)
	}
	s.until(t, "call", func(d json.RawMessage) bool {
		var c Call
		return json.Unmarshal(d, &c) == nil && c.Node == "echo" && c.Caller == "cli" && c.Result == "seen"
	})
	if err := f.s.Stop(context.Background(), "echo"); err != nil {
		t.Fatal(err)
	}
	s.until(t, "node", func(d json.RawMessage) bool {
		var v nodeView
		return json.Unmarshal(d, &v) == nil && v.ID == "echo" && v.State == node.Stopped
	})
	// A page that opens now is shown the call from before.
	var calls []Call
	s2 := f.stream(t, c)
	data := s2.until(t, "calls", func(json.RawMessage) bool { return true })
	if json.Unmarshal(data, &calls) != nil || len(calls) != 1 || calls[0].Args != `{"text": "seen"}` {
		t.Errorf("a new stream's calls: %s", data)
	}
}

// A graph run is sent while it runs, step by step, then as it ended.
func TestEventStreamGraphRun(t *testing.T) {
	f := newFixture(t)
	c, _ := f.visit(t)
	s := f.stream(t, c)
	done := make(chan error, 1)
	go func() {
		_, err := f.s.Call(context.Background(), "g", &node.CallRequest{Tool: graphlang.ToolName})
		done <- err
	}()
	type rec struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Steps []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"steps"`
	}
	states := func(d json.RawMessage) (rec, string, []Step) {
		var v struct {
			Record rec    `json:"record"`
			Steps  []Step `json:"steps"`
		}
		_ = json.Unmarshal(d, &v)
		var b strings.Builder
		for _, st := range v.Record.Steps {
			fmt.Fprintf(&b, "%s:%s ", st.ID, st.State)
		}
		return v.Record, strings.TrimSpace(b.String()), v.Steps
	}
	var steps []Step // sent once, with the run's first record
	s.until(t, "run", func(d json.RawMessage) bool {
		_, st, sts := states(d)
		if steps == nil {
			steps = sts
		}
		return st == "a:finished b:started c:pending"
	})
	if len(steps) != 3 || steps[2].ID != "c" || len(steps[2].Needs) != 1 || steps[2].Needs[0] != "b" {
		t.Errorf("the run's first event has steps %+v, want a, b, c with c waiting for b", steps)
	}
	close(f.release)
	last := s.until(t, "run", func(d json.RawMessage) bool {
		r, _, _ := states(d)
		return r.State == "finished"
	})
	r, st, _ := states(last)
	if st != "a:finished b:finished c:finished" {
		t.Errorf("the run ended with steps %s", st)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Its record after it ended, on request.
	resp, body := do(t, c, "GET", f.base+"/ui/api/sessions/default/nodes/g/runs/"+url.PathEscape(r.ID), nil, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"xyz"`) || !strings.Contains(body, `"needs":["b"]`) {
		t.Errorf("the run's record answered %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, c, "GET", f.base+"/ui/api/sessions/default/nodes/echo/runs/x", nil, ""); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the runs of a node that keeps none answered %d, want 400", resp.StatusCode)
	}
}

func TestRecentCallsRing(t *testing.T) {
	b := newCallBus()
	for i := range maxRecent + 7 {
		b.record("s", Call{Tool: fmt.Sprint(i)})
	}
	got := b.snapshot("s")
	if len(got) != maxRecent || got[0].Tool != "7" || got[len(got)-1].Tool != fmt.Sprint(maxRecent+6) {
		t.Fatalf("the ring kept %d calls, %s to %s; want the last %d in order", len(got), got[0].Tool, got[len(got)-1].Tool, maxRecent)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("calls out of order at %d: %d after %d", i, got[i].Seq, got[i-1].Seq)
		}
	}
	if got := b.snapshot("other"); got == nil || len(got) != 0 {
		t.Errorf("a session with no calls: %v, want an empty list (JSON [])", got)
	}
}

// BenchmarkCalled is what the dashboard adds to every call of the
// daemon's sessions (session.Options.OnCall): keeping it among the
// recent calls, with no page open.
func BenchmarkCalled(b *testing.B) {
	d := New(&Options{Session: func(context.Context, string) (*session.Session, error) { return nil, nil }})
	c := &session.CallInfo{Node: "echo", Tool: "identity", Arguments: json.RawMessage(`{"text":"hi"}`),
		Caller: node.Caller{Kind: node.CallerMCP, Name: "bench"}, Start: time.Now(), Duration: time.Millisecond,
		Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}}
	b.ReportAllocs()
	for b.Loop() {
		d.Called("default", c)
	}
}
