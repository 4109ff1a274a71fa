//go:build linux

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// writeState writes the default session's state file as a daemon would.
func (h *nerveHome) writeState(specs ...node.Spec) {
	h.t.Helper()
	data, err := json.Marshal(map[string]any{"version": 1, "session": "default", "nodes": specs})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.MkdirAll(h.p.Sessions, 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.p.Sessions, "default.json"), data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// waitNode waits until node id is in state want and returns its info.
func (h *nerveHome) waitNode(id string, want node.State) node.Info {
	h.t.Helper()
	var info node.Info
	testutil.WaitFor(h.t, 30*time.Second, func() bool {
		info = h.nodes()[id]
		return info.State == want
	}, id+" to be "+want.String())
	return info
}

// Issue 21, item 1: a saved mcp node whose env nests ${A:- 2,500,000 deep
// killed every daemon that restored it (a stack overflow in expansion).
// Now the node is ERROR naming the limit, and the daemon and its other
// nodes live.
func TestSavedDeepExpansionDoesNotKillDaemon(t *testing.T) {
	h := newHome(t)
	const depth = 2_500_000
	deep := strings.Repeat("${A:-", depth) + "x" + strings.Repeat("}", depth)
	h.writeState(
		node.Spec{ID: "bad", Kind: "mcp", Command: []string{"true"}, Env: map[string]string{"DEEP": deep}},
		node.Spec{ID: "ok", Kind: "identity"},
	)
	bad := h.waitNode("bad", node.Error)
	if !strings.Contains(bad.Error, "more than 32 deep") {
		t.Errorf("bad's error = %q, want it to name the nesting limit", bad.Error)
	}
	h.waitNode("ok", node.Ready)
	pid := h.daemonPID()
	// The same daemon still answers: it did not die and come back.
	if out := h.must("call", "@ok", "hi"); !strings.Contains(out, "hi") {
		t.Errorf("@ok hi = %q", out)
	}
	if got := h.daemonPID(); got != pid {
		t.Errorf("daemon pid changed %d → %d: it died", pid, got)
	}
}

// Issue 21, item 1: a node whose restore did not finish last time (the
// daemon died during it; its marker is left) is not restored again but
// held in ERROR with the reason, in `node ls` and `daemon status`, while
// the other nodes come back; `node restart` builds it.
func TestNodeWhoseRestoreDiedIsHeld(t *testing.T) {
	h := newHome(t)
	h.writeState(node.Spec{ID: "victim", Kind: "identity"}, node.Spec{ID: "other", Kind: "identity"})
	marks := filepath.Join(h.p.Sessions, "default", "restoring")
	if err := os.MkdirAll(marks, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marks, "victim"), []byte("2026-11-25T06:00:00Z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := h.waitNode("victim", node.Error)
	if !strings.Contains(victim.Error, "the daemon died while restoring this node last time") || !strings.Contains(victim.Error, "nerve node restart victim") {
		t.Errorf("victim's error = %q, want the reason and the fix", victim.Error)
	}
	h.waitNode("other", node.Ready)
	if st := h.must("daemon", "status"); !strings.Contains(st, `node "victim" is ERROR: the daemon died while restoring`) {
		t.Errorf("daemon status does not report the held node:\n%s", st)
	}
	// Held across a restart of the daemon until the person acts.
	h.must("daemon", "stop")
	h.waitNode("victim", node.Error)
	h.must("node", "restart", "victim")
	h.waitNode("victim", node.Ready)
	if _, err := os.Stat(filepath.Join(marks, "victim")); !os.IsNotExist(err) {
		t.Errorf("victim's marker is still there after its restart (%v)", err)
	}
	// Restored normally now: no markers are left once the starts are done.
	h.must("daemon", "stop")
	h.waitNode("victim", node.Ready)
	h.waitNode("other", node.Ready)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		left, _ := os.ReadDir(marks)
		return len(left) == 0
	}, "the restore markers to be cleared")
}

// deepGraph is the repro's graph: one step whose `when:` is cond.
func deepGraph(cond string) []byte {
	src, _ := json.Marshal(map[string]any{"steps": map[string]any{
		"a": map[string]any{"call": "echo.identity", "args": map[string]any{"text": "x"}, "when": cond}}})
	return src
}

// Issue 21, item 2: a graph whose `when:` nests 2,000,000 parentheses (a
// 4 MB body, under the API's cap) posted to POST /v1/sessions/default/nodes
// overflowed the daemon's stack, and 4,000,000 '!' raised it to 1.77 GB.
// Now each is a 400 naming the limit and the daemon lives; `nerve graph
// add --from` of the same file is an error, not a Go stack dump.
func TestDeepGraphThroughSocketAndCLI(t *testing.T) {
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	pid := h.daemonPID()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", h.p.Socket)
	}}}
	for name, cond := range map[string]string{
		"parens": strings.Repeat("(", 2_000_000) + "true" + strings.Repeat(")", 2_000_000),
		"bangs":  strings.Repeat("!", 4_000_000) + "true",
	} {
		spec, _ := json.Marshal(node.Spec{ID: "g" + name, Kind: "graph", Options: mustJSON(t, map[string]string{"source": string(deepGraph(cond))})})
		resp, err := hc.Post("http://nerve/v1/sessions/default/nodes", "application/json", bytes.NewReader(spec))
		if err != nil {
			t.Fatalf("%s: posting a %d-byte spec: %v (did the daemon die?)", name, len(spec), err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "over 1048576 bytes (1 MiB, the limit)") {
			t.Errorf("%s: %d %s; want 400 naming the size limit", name, resp.StatusCode, body)
		}
	}
	// Under the size limit, the nesting limit answers.
	spec, _ := json.Marshal(node.Spec{ID: "gnest", Kind: "graph", Options: mustJSON(t, map[string]string{"source": string(deepGraph(strings.Repeat("(", 1000) + "true" + strings.Repeat(")", 1000)))})})
	resp, err := hc.Post("http://nerve/v1/sessions/default/nodes", "application/json", bytes.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "nests more than 64 deep") {
		t.Errorf("2,000-byte condition nesting 1,000 deep: %d %s; want 400 naming the nesting limit", resp.StatusCode, body)
	}

	file := filepath.Join(h.home, "deep.json")
	if err := os.WriteFile(file, deepGraph(strings.Repeat("(", 2_000_000)+"true"+strings.Repeat(")", 2_000_000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := h.run("graph", "add", "g", "--from", file)
	if code == 0 || code == 2 && strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "stack overflow") || !strings.Contains(stderr, "over 1048576 bytes") {
		t.Errorf("graph add --from a 4 MB graph: exit %d\n%.2000s", code, stderr)
	}
	if got := h.daemonPID(); got != pid {
		t.Errorf("daemon pid changed %d → %d: it died", pid, got)
	}
	for id := range h.nodes() {
		if strings.HasPrefix(id, "g") {
			t.Errorf("graph %s was added", id)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 21, item 4: SIGKILLs left .default.json.tmp-* files beside the
// state file (and in node folders); a daemon that starts removes them and
// keeps everything else.
func TestStaleTempFilesRemovedAtStart(t *testing.T) {
	h := newHome(t)
	h.writeState(node.Spec{ID: "echo", Kind: "identity"})
	runs := filepath.Join(h.p.Sessions, "default", "nodes", "g", "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := []string{
		filepath.Join(h.p.Sessions, ".default.json.tmp-123456"),
		filepath.Join(h.p.Sessions, ".default.json.tmp-987654"),
		filepath.Join(runs, ".g.20261125-060000.000-abcdef.json.tmp-42"),
	}
	kept := filepath.Join(runs, "g.20261125-060000.000-abcdef.json")
	for _, p := range append(stale, kept) {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.waitNode("echo", node.Ready)
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a run record was removed: %v", err)
	}
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 21, item 3: a graph calling an mcp node whose URL is nerve's own
// /mcp/SESSION/node/GRAPH made 9,980 nested calls. Such a node is refused
// when it connects, and the chain of calls is carried across nerve's hops
// (the _meta of a tools/call on nerve's endpoint, then graph → node in
// ctx) and refused past node.MaxCallDepth, naming the chain.
func TestCallsThroughNerveAreBounded(t *testing.T) {
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	def := filepath.Join(h.home, "g.yaml")
	if err := os.WriteFile(def, []byte("steps:\n  a: {call: echo.identity, args: {text: hi}}\noutput: ${steps.a.text}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.must("graph", "add", "g", "--from", def)
	var ep struct{ URL, Token string }
	if err := json.Unmarshal([]byte(h.must("mcp", "url", "--node", "g", "--json")), &ep); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := h.run("node", "add", "mcp", "loop", "--url", ep.URL, "--header", "Authorization: Bearer "+ep.Token)
	if code == 0 || !strings.Contains(stderr, "node loop's server is nerve's own endpoint of node g") {
		t.Errorf("node add mcp loop --url %s: exit %d\n%s", ep.URL, code, stderr)
	}

	if err := json.Unmarshal([]byte(h.must("mcp", "url", "--json")), &ep); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "chain-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: &http.Client{Transport: bearerRT{ep.Token}}}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", ep.URL, err)
	}
	defer cs.Close()
	call := func(hops int) (*mcp.CallToolResult, error) {
		chain := make([]string, hops)
		for i := range chain {
			chain[i] = "other/n" + strconv.Itoa(i)
		}
		return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "g.run", Meta: mcp.Meta{node.ChainMetaKey: chain}})
	}
	// The graph is one hop and its step another: 14 before them is the most.
	res, err := call(node.MaxCallDepth - 2)
	if err != nil || res.IsError {
		t.Fatalf("a call %d hops deep: %v %+v", node.MaxCallDepth, err, res)
	}
	res, err = call(node.MaxCallDepth - 1)
	msg := ""
	if err != nil {
		msg = err.Error()
	} else if len(res.Content) > 0 {
		msg = res.Content[0].(*mcp.TextContent).Text
	}
	if !strings.Contains(msg, "calls nest more than 16 deep (the limit)") || !strings.Contains(msg, "other/n14 → default/g → default/echo") {
		t.Errorf("a call %d hops deep: %q; want the limit and the chain named", node.MaxCallDepth+1, msg)
	}
	if _, err := call(100); err == nil || !strings.Contains(err.Error(), "calls nest more than 16 deep") {
		t.Errorf("a request whose chain is 100 hops: %v; want it refused", err)
	}
}

// Issue 21, found by FuzzValidateArguments: a server whose tool schema
// refers to itself through anyOf killed the daemon on the first call of
// that tool (the schema library recursed until a fatal stack overflow while
// nerve checked the arguments). Now the schema is not used for checking,
// the call reaches the server, and the daemon lives.
func TestSelfReferringToolSchemaDoesNotKillDaemon(t *testing.T) {
	h := newHome(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	h.must("node", "add", "mcp", "evil", "--", server, "--loop-schema")
	pid := h.daemonPID()
	out, stderr, code := h.run("call", "@evil", "loop", `{"x": "hello"}`)
	if code != 0 || !strings.Contains(out, `"x":"hello"`) && !strings.Contains(out, `"x": "hello"`) {
		t.Errorf("call @evil loop: exit %d\nstdout: %s\nstderr: %.2000s", code, out, stderr)
	}
	if got := h.daemonPID(); got != pid {
		t.Errorf("daemon pid changed %d → %d: it died", pid, got)
	}
}
