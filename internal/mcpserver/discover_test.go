package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// searchNames calls search_tools and returns the names found.
func searchNames(t *testing.T, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolSearch, Arguments: map[string]any{"query": query}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %q: %v %s", query, err, mustJSON(res))
	}
	var out searchResult
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatalf("search_tools answered %q: %v", resultText(res), err)
	}
	var names []string
	for _, f := range out.Tools {
		if f.InputSchema == nil {
			t.Errorf("%s found without an input schema", f.Name)
		}
		names = append(names, f.Name)
	}
	return names
}

// TestDiscover: with Options.Discover a client lists three tools, finds
// the session's tools with search_tools, and calls them with call_tool as
// it would directly — validation, progress, errors — while a lazy node
// stays stopped until a tool of its own is called, and only it starts.
func TestDiscover(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	addNode(t, s, fixtureNode(t, "fy"))
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	addNode(t, s, node.Spec{ID: "sh", Kind: "bash"})
	src, _ := json.Marshal(map[string]string{"source": "description: greets a visitor by name\ninputs:\n  who: {type: string}\nsteps:\n  hi: {call: echo.identity, args: {text: \"hello ${inputs.who}\"}}\n"})
	addNode(t, s, node.Spec{ID: "welcome", Kind: "graph", Options: src})
	// Stopped with a catalogue: lazy, their tools still listed.
	for _, id := range []string{"fx", "fy"} {
		n, _ := s.Node(id)
		if err := n.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSettings(session.Settings{Expose: "!sh.*"}); err != nil {
		t.Fatal(err)
	}
	cs, ev := connect(t, serve(t, NewSessionBackend(s), &Options{Discover: true}), nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{ToolCall, ToolDescribe, ToolSearch}) {
		t.Fatalf("tools = %v, want the three meta-tools", got)
	}

	names := searchNames(t, cs, "echo the text back")
	if !slices.Contains(names, "echo.identity") || !slices.Contains(names, "fx.echo") {
		t.Errorf("search found %v, want echo.identity and fx.echo", names)
	}
	if got := searchNames(t, cs, "run a bash shell command"); slices.Contains(got, "sh.bash") {
		t.Errorf("search found %v: sh.bash is hidden by the session's expose", got)
	}
	for _, id := range []string{"fx", "fy"} {
		if st := mustState(t, s, id); st != node.Stopped {
			t.Fatalf("%s is %v after searching: search must not start nodes", id, st)
		}
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fx.echo", "arguments": map[string]any{"text": "via call_tool"}}})
	if err != nil || res.IsError || resultText(res) != "via call_tool" {
		t.Fatalf("call_tool fx.echo: %v %s", err, mustJSON(res))
	}
	if st := mustState(t, s, "fx"); st != node.Ready && st != node.Busy {
		t.Errorf("fx is %v after its tool was called, want READY", st)
	}
	if st := mustState(t, s, "fy"); st != node.Stopped {
		t.Errorf("fy is %v: only the called node may start", st)
	}

	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"bad arguments", map[string]any{"name": "echo.identity", "arguments": map[string]any{"text": 3}}, "text"},
		{"unknown tool", map[string]any{"name": "echo.identiti"}, "echo.identity"},
		{"hidden tool", map[string]any{"name": "sh.bash", "arguments": map[string]any{"command": "touch /tmp/nerve-leak"}}, "search_tools"},
		{"tool error", map[string]any{"name": "fx.fail", "arguments": map[string]any{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCall, Arguments: tc.args})
			if err != nil {
				t.Fatalf("want a tool error, got %v", err)
			}
			if !res.IsError || !strings.Contains(resultText(res), tc.want) {
				t.Errorf("call_tool %v: %s, want isError naming %q", tc.args, mustJSON(res), tc.want)
			}
		})
	}

	// Progress of the called tool reaches the client of call_tool.
	params := &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fx.slow", "arguments": map[string]any{"steps": 3, "ms": 30}}}
	params.SetProgressToken("p1")
	if res, err := cs.CallTool(t.Context(), params); err != nil || res.IsError {
		t.Fatalf("call_tool fx.slow: %v %s", err, mustJSON(res))
	}
	select {
	case p := <-ev.progress:
		if p.ProgressToken != "p1" {
			t.Errorf("progress for token %v, want p1", p.ProgressToken)
		}
	case <-time.After(5 * time.Second):
		t.Error("no progress from fx.slow through call_tool")
	}

	// A graph is found and run like any tool.
	if got := searchNames(t, cs, "greet a visitor"); len(got) == 0 || got[0] != "welcome.run" {
		t.Errorf("search \"greet a visitor\" found %v, want welcome.run first", got)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "welcome.run", "arguments": map[string]any{"who": "ada"}}})
	if err != nil || res.IsError || !strings.Contains(mustJSON(res), "hello ada") {
		t.Errorf("call_tool welcome.run: %v %s", err, mustJSON(res))
	}

	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolDescribe, Arguments: map[string]any{"name": "fy.echo"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), `"inputSchema"`) {
		t.Errorf("describe_tool fy.echo: %v %s", err, mustJSON(res))
	}
}

func mustState(t *testing.T, s *session.Session, id string) node.State {
	t.Helper()
	n, err := s.Node(id)
	if err != nil {
		t.Fatal(err)
	}
	return n.State()
}

// TestDiscoverCancellation: cancelling call_tool cancels the call it
// made, and the server behind the node hears of it.
func TestDiscoverCancellation(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	cs, ev := connect(t, serve(t, NewSessionBackend(s), &Options{Discover: true}), nil)
	ctx, cancel := context.WithCancel(t.Context())
	p := &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fx.slow", "arguments": map[string]any{"ms": 60000, "steps": 600}}}
	p.SetProgressToken("c")
	errc := make(chan error, 1)
	go func() { _, err := cs.CallTool(ctx, p); errc <- err }()
	select {
	case <-ev.progress:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress from fx.slow through call_tool")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call_tool returned no error")
	}
	n, _ := s.Node("fx")
	tail := n.(interface{ StderrTail() []string })
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return slices.ContainsFunc(tail.StderrTail(), func(l string) bool { return strings.Contains(l, "slow: cancelled") })
	}, "the server behind the node to say the call was cancelled")
}

// TestDiscoverSessionIndex: on a session, search_tools ranks with the
// session's one index (the server builds none of its own) and never
// answers empty: a query no tool matches gets the nearest tools, marked.
func TestDiscoverSessionIndex(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	srv := serve(t, NewSessionBackend(s), &Options{Discover: true})
	cs, _ := connect(t, srv, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolSearch, Arguments: map[string]any{"query": "zxqv"}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %s", err, mustJSON(res))
	}
	var out searchResult
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 1 || out.Tools[0].Name != "echo.identity" || !out.Nearest || !strings.Contains(out.Note, "no tool matches") {
		t.Errorf("search_tools zxqv: %s, want echo.identity as the nearest, with a note", resultText(res))
	}
	if got := searchNames(t, cs, "return text unchanged"); len(got) == 0 || got[0] != "echo.identity" {
		t.Errorf("search found %v, want echo.identity", got)
	}
	srv.catMu.Lock()
	own := srv.index
	srv.catMu.Unlock()
	if own != nil {
		t.Error("the server built an index of its own beside the session's")
	}
}
