package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// connectHTTPModern connects a Go SDK client speaking 2026-07-28 to url:
// server/discover, then requests without a session.
func connectHTTPModern(t testing.TB, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-modern", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token: token}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: modernProtocol})
	if err != nil {
		t.Fatalf("connecting to %s in 2026-07-28: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != modernProtocol {
		t.Fatalf("%s: negotiated %s, want %s", url, v, modernProtocol)
	}
	if id := cs.ID(); id != "" {
		t.Errorf("%s: a 2026-07-28 client got session %q, want none", url, id)
	}
	return cs
}

// TestHTTPBothEras: one URL serves a client of 2025-11-25 (a session) and
// one of 2026-07-28 (no session) the same tools, and the state a client
// chooses in the URL (?tools=, ?read_only=1, ?discover=1, ?code=1, one
// node) holds for the modern client without a session.
func TestHTTPBothEras(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	ep := startEndpoint(t, s)

	legacy := connectHTTP(t, ep.URL("test"), ep.Token(), nil)
	modern := connectHTTPModern(t, ep.URL("test"), ep.Token(), nil)
	if legacy.ID() == "" {
		t.Error("the 2025-11-25 client got no session")
	}
	lt, mt := toolNames(t, legacy), toolNames(t, modern)
	if !slices.Equal(lt, mt) || !slices.Contains(mt, "fx.echo") || !slices.Contains(mt, "echo.identity") {
		t.Errorf("tools: 2025-11-25 %v, 2026-07-28 %v: want the same, with fx.echo and echo.identity", lt, mt)
	}
	for _, cs := range []*mcp.ClientSession{legacy, modern} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "hi"}})
		if err != nil || resultText(res) != "hi" {
			t.Errorf("call: %v %s", err, mustJSON(res))
		}
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?tools=echo", []string{"echo.identity"}},
		{"?tools=fx.*&read_only=1", nil},
		{"?discover=1", []string{"call_tool", "describe_tool", "search_tools"}},
		{"?code=1&tools=echo", []string{"run_script"}},
	} {
		cs := connectHTTPModern(t, ep.URL("test")+tc.query, ep.Token(), nil)
		if got := toolNames(t, cs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: tools %v, want %v", tc.query, got, tc.want)
		}
	}

	d := connectHTTPModern(t, ep.URL("test")+"?discover=1", ep.Token(), nil)
	res, err := d.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "echo.identity", "arguments": map[string]any{"text": "found"}}})
	if err != nil || resultText(res) != "found" {
		t.Errorf("call_tool: %v %s", err, mustJSON(res))
	}
	c := connectHTTPModern(t, ep.URL("test")+"?code=1&tools=echo", ep.Token(), nil)
	res, err = c.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": `echo.identity(text="from a script")`}})
	if err != nil || !strings.Contains(resultText(res), "from a script") {
		t.Errorf("run_script: %v %s", err, mustJSON(res))
	}
	res, err = c.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": `fx.echo(text="hidden")`}})
	if err != nil || !res.IsError {
		t.Errorf("run_script calling a tool ?tools= hides: %v %s, want an error result", err, mustJSON(res))
	}

	n := connectHTTPModern(t, ep.NodeURL("test", "fx"), ep.Token(), nil)
	if got := toolNames(t, n); !slices.Contains(got, "echo") || slices.Contains(got, "fx.echo") {
		t.Errorf("node URL tools %v: want fx's own, unprefixed", got)
	}
	if pr, err := n.ListPrompts(t.Context(), nil); err != nil || len(pr.Prompts) == 0 {
		t.Errorf("node URL prompts: %v %s", err, mustJSON(pr))
	}
	if rr, err := n.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "fixture://text/hello"}); err != nil || len(rr.Contents) == 0 {
		t.Errorf("node URL resource: %v %s", err, mustJSON(rr))
	}
}

// TestHTTPModernElicitation: an MCP server behind a node asks for an
// elicitation in the middle of a call, the old way; a client of
// 2026-07-28 on the node's URL answers it through input_required and its
// retry, over HTTP with no session between the rounds.
func TestHTTPModernElicitation(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	ep := startEndpoint(t, s)
	asked := make(chan string, 1)
	cs := connectHTTPModern(t, ep.NodeURL("test", "fx"), ep.Token(), &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "over HTTP"}}, nil
		},
	})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "which way?"}})
	if err != nil || !strings.Contains(resultText(res), "user answered: over HTTP") {
		t.Fatalf("elicit: %v %s", err, mustJSON(res))
	}
	if q := <-asked; q != "which way?" {
		t.Errorf("the client was asked %q", q)
	}
}

// post sends one JSON-RPC message to url with headers, and returns the
// status and the body.
func post(t testing.TB, url, token, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// jsonOf returns the first JSON-RPC message of an answer (plain JSON or
// an event stream).
func jsonOf(t testing.TB, body string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "data:"))
		var m map[string]any
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
			return m
		}
	}
	t.Fatalf("no JSON-RPC message in %q", body)
	return nil
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestHTTPModernWire checks what a client of 2026-07-28 sees on the wire:
// server/discover names both eras; every result carries resultType; lists
// carry ttlMs and cacheScope; the headers are checked (-32020, HTTP 400);
// a request without a session never gets one.
func TestHTTPModernWire(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "b", Kind: "identity"})
	addNode(t, s, node.Spec{ID: "a", Kind: "identity"})
	ep := startEndpoint(t, s)
	url := ep.URL("test")
	hdr := func(method, name string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": modernProtocol, "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}

	code, body := post(t, url, ep.Token(), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, hdr("server/discover", ""))
	m := jsonOf(t, body)
	res, _ := m["result"].(map[string]any)
	vs, _ := res["supportedVersions"].([]any)
	if code != http.StatusOK || !slices.Contains(vs, any(modernProtocol)) || !slices.Contains(vs, any("2025-11-25")) {
		t.Errorf("server/discover: %d %s, want both eras' versions", code, body)
	}

	code, body = post(t, url, ep.Token(), `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`, hdr("tools/list", ""))
	res, _ = jsonOf(t, body)["result"].(map[string]any)
	var names []string
	tools, _ := res["tools"].([]any)
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if code != http.StatusOK || res["resultType"] != "complete" || res["cacheScope"] != "private" || res["ttlMs"] == nil {
		t.Errorf("tools/list: %d %s, want resultType complete, ttlMs and cacheScope", code, body)
	}
	if !slices.Equal(names, []string{"a.identity", "b.identity"}) {
		t.Errorf("tools/list order %v, want sorted by name", names)
	}

	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a.identity","arguments":{"text":"x"},` + modernMeta + `}}`
	code, body = post(t, url, ep.Token(), call, hdr("tools/call", "a.identity"))
	res, _ = jsonOf(t, body)["result"].(map[string]any)
	if code != http.StatusOK || res["resultType"] != "complete" {
		t.Errorf("tools/call: %d %s, want resultType complete", code, body)
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
	}{
		{"no MCP-Protocol-Version", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "a.identity"}},
		{"Mcp-Method not the body's", hdr("tools/list", "a.identity")},
		{"Mcp-Name not the body's", hdr("tools/call", "b.identity")},
	} {
		code, body := post(t, url, ep.Token(), call, tc.headers)
		e, _ := jsonOf(t, body)["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil || e["code"] != float64(mcp.CodeHeaderMismatch) {
			t.Errorf("%s: %d %s, want 400 and -32020", tc.name, code, body)
		}
	}

	// A 2025-11-25 client on the same URL still initializes a session.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ep.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get(sessionHeader) == "" {
		t.Error("initialize got no session")
	}
}

// ttlBackend's node says its server keeps its tool list good for 90 s.
type ttlBackend struct{ *SessionBackend }

type ttlNode struct{ MCPNode }

func (ttlNode) ListCache(list string) (time.Duration, string) {
	if list == "tools" {
		return 90 * time.Second, "public"
	}
	return 0, ""
}

func (b ttlBackend) MCPNode(ctx context.Context, id string) (MCPNode, error) {
	n, err := b.SessionBackend.MCPNode(ctx, id)
	if err != nil {
		return nil, err
	}
	return ttlNode{n}, nil
}

// TestListCache: a client of 2026-07-28 may keep a node's tool list as
// long as its server said (what is left of its ttl), never beyond the
// person it was served to (private); a session's lists get no time.
func TestListCache(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	b := ttlBackend{NewSessionBackend(s)}
	for _, tc := range []struct {
		opts *Options
		ttl  int
	}{{&Options{Node: "fx"}, 90_000}, {nil, 0}} {
		cs := connectModern(t, serve(t, b, tc.opts), nil)
		tl, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if tl.CacheScope != "private" || tl.TTLMs > tc.ttl || tc.ttl > 0 && tl.TTLMs < tc.ttl-10_000 {
			t.Errorf("node %q: tools/list ttlMs %d cacheScope %q, want about %d and private", nodeOpt(tc.opts), tl.TTLMs, tl.CacheScope, tc.ttl)
		}
		pl, err := cs.ListPrompts(t.Context(), nil)
		if err != nil || pl.CacheScope != "private" || pl.TTLMs != 0 {
			t.Errorf("prompts/list: %v ttlMs %d cacheScope %q, want 0 and private", err, pl.TTLMs, pl.CacheScope)
		}
	}
}

func nodeOpt(o *Options) string {
	if o == nil {
		return ""
	}
	return o.Node
}
