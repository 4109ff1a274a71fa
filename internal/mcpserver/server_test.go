package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

func TestToolNames(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	addNode(t, s, node.Spec{ID: "sh", Kind: "bash"})
	for _, tc := range []struct {
		names string
		want  []string
	}{
		{"", []string{"echo.identity", "sh.bash"}},
		{NamesQualified, []string{"echo.identity", "sh.bash"}},
		{NamesLLM, []string{"echo__identity", "sh__bash"}},
	} {
		t.Run("names="+tc.names, func(t *testing.T) {
			cs, _ := connect(t, serve(t, NewSessionBackend(s), &Options{Names: tc.names}), nil)
			if got := toolNames(t, cs); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.want[1], Arguments: map[string]any{"command": "echo hi from $0"}})
			if err != nil {
				t.Fatalf("calling %s: %v", tc.want[1], err)
			}
			if got := resultText(res); !strings.Contains(got, "hi from") || res.IsError {
				t.Errorf("%s answered %q (isError %v)", tc.want[1], got, res.IsError)
			}
		})
	}
}

func TestCallErrorsAreToolErrors(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	cs, _ := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing required", map[string]any{}, "text"},
		{"wrong type", map[string]any{"text": 3}, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: tc.args})
			if err != nil {
				t.Fatalf("want a tool error, got protocol error %v", err)
			}
			if !res.IsError || !strings.Contains(resultText(res), tc.want) {
				t.Errorf("result %s: want isError naming %q", mustJSON(res), tc.want)
			}
		})
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope.identity"}); err == nil {
		t.Error("calling an unknown tool: want a protocol error")
	}
}

// TestListChanged adds, breaks, restarts and removes nodes while a client
// is connected: an added or removed node is told and seen; a node in ERROR
// keeps its tools listed, and a call says why and what starts it (issue
// 27).
func TestListChanged(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "a", Kind: "identity"})
	cs, ev := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	has := func(name string) func([]string) bool {
		return func(n []string) bool { return slices.Contains(n, name) }
	}
	not := func(f func([]string) bool) func([]string) bool { return func(n []string) bool { return !f(n) } }

	addNode(t, s, node.Spec{ID: "late", Kind: "identity"})
	waitTools(t, cs, ev, "late.identity listed", has("late.identity"))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late.identity", Arguments: map[string]any{"text": "new"}})
	if err != nil || resultText(res) != "new" {
		t.Fatalf("calling the new tool: %v %s", err, mustJSON(res))
	}

	n, err := s.Node("late")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.(*identity.Node).Machine.To(node.Error, "test fault"); err != nil {
		t.Fatal(err)
	}
	// The server saw the move to ERROR before it sees z added.
	addNode(t, s, node.Spec{ID: "z", Kind: "identity"})
	if got := waitTools(t, cs, ev, "z listed", has("z.identity")); !slices.Contains(got, "late.identity") {
		t.Errorf("late.identity withdrawn while late is in ERROR: %v", got)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late.identity", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), `node "late" is ERROR (test fault)`) || !strings.Contains(resultText(res), "restart it with `nerve node restart late`") {
		t.Errorf("calling a tool of a node in ERROR: %v %s", err, mustJSON(res))
	}
	if err := s.Restart(t.Context(), "late"); err != nil {
		t.Fatal(err)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late.identity", Arguments: map[string]any{"text": "back"}})
	if err != nil || resultText(res) != "back" {
		t.Errorf("calling the tool after a restart: %v %s", err, mustJSON(res))
	}
	if err := s.Remove(t.Context(), "z"); err != nil {
		t.Fatal(err)
	}

	if err := s.Remove(t.Context(), "late"); err != nil {
		t.Fatal(err)
	}
	got := waitTools(t, cs, ev, "late.identity gone after rm", not(has("late.identity")))
	if !slices.Equal(got, []string{"a.identity"}) {
		t.Errorf("tools after rm = %v, want [a.identity]", got)
	}
}

// TestServerToolsChange: a server behind an mcp node adds a tool; the
// client of the session hears of it.
func TestServerToolsChange(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	cs, ev := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fx.add_tool", Arguments: map[string]any{"name": "fresh"}}); err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, ev, "fx.fresh listed", func(n []string) bool { return slices.Contains(n, "fx.fresh") })
}

// TestResultsWhole calls tools of every content type through the session
// endpoint and compares with the same call made on the session.
func TestResultsWhole(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	cs, _ := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"text": "hello"}},
		{"image", nil},
		{"audio", nil},
		{"structured", map[string]any{"text": "two words"}},
		{"fail", map[string]any{"message": "broken on purpose"}},
		{"resource_link", nil},
		{"embedded_resource", nil},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			direct, err := s.CallTool(t.Context(), "fx."+tc.tool, []byte(mustJSON(orEmpty(tc.args))), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fx." + tc.tool, Arguments: orEmpty(tc.args)})
			if err != nil {
				t.Fatal(err)
			}
			if mustJSON(got) != mustJSON(direct) {
				t.Errorf("through the endpoint:\n%s\ndirect:\n%s", mustJSON(got), mustJSON(direct))
			}
		})
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func TestProgressAndLogs(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	cs, ev := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "fx.slow", Arguments: map[string]any{"ms": 30, "steps": 3}}
	p.SetProgressToken("tok-1")
	res, err := cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %s", err, mustJSON(res))
	}
	var got []float64
	for len(got) < 3 {
		select {
		case pr := <-ev.progress:
			if pr.ProgressToken != "tok-1" {
				t.Errorf("progress token %v, want tok-1", pr.ProgressToken)
			}
			got = append(got, pr.Progress)
		case <-time.After(5 * time.Second):
			t.Fatalf("progress seen: %v, want 1 2 3", got)
		}
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fx.log", Arguments: map[string]any{"level": "warning", "message": "look here"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-ev.logs:
		if l.Level != "warning" || !strings.Contains(mustJSON(l.Data), "look here") {
			t.Errorf("log = %s", mustJSON(l))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no log message reached the client")
	}
}

// TestCancellation: a client cancels a call; the MCP server behind the
// node hears of it (it says so on its stderr).
func TestCancellation(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	cs, ev := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	ctx, cancel := context.WithCancel(t.Context())
	p := &mcp.CallToolParams{Name: "fx.slow", Arguments: map[string]any{"ms": 60000, "steps": 600}}
	p.SetProgressToken("c")
	errc := make(chan error, 1)
	go func() { _, err := cs.CallTool(ctx, p); errc <- err }()
	select {
	case <-ev.progress: // the call is running on the server
	case <-time.After(10 * time.Second):
		t.Fatal("no progress from the slow call")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	n, _ := s.Node("fx")
	tail := n.(interface{ StderrTail() []string })
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return slices.ContainsFunc(tail.StderrTail(), func(l string) bool { return strings.Contains(l, "slow: cancelled") })
	}, "the server behind the node to say the call was cancelled")
}

func TestResourcesAndPrompts(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	cs, _ := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	ctx := t.Context()
	lr, err := cs.ListResources(ctx, nil)
	if err != nil || len(lr.Resources) == 0 {
		t.Fatalf("resources: %v %s", err, mustJSON(lr))
	}
	fx, _ := s.Node("fx")
	direct := fx.(MCPNode)
	if mustJSON(lr.Resources) != mustJSON(direct.Resources()) {
		t.Errorf("resources through the endpoint:\n%s\nof the node:\n%s", mustJSON(lr.Resources), mustJSON(direct.Resources()))
	}
	for _, r := range lr.Resources {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
		if err != nil || len(rr.Contents) == 0 {
			t.Errorf("reading %s: %v %s", r.URI, err, mustJSON(rr))
		}
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != len(direct.ResourceTemplates()) || len(lt.ResourceTemplates) == 0 {
		t.Fatalf("templates: %v %s", err, mustJSON(lt))
	}
	lp, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range lp.Prompts {
		names = append(names, p.Name)
	}
	for _, p := range direct.Prompts() {
		if !slices.Contains(names, "fx."+p.Name) {
			t.Errorf("prompt fx.%s missing from %v", p.Name, names)
		}
	}
	for _, p := range direct.Prompts() {
		args := map[string]string{}
		for _, a := range p.Arguments {
			args[a.Name] = "x"
		}
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fx." + p.Name, Arguments: args})
		if err != nil {
			t.Fatalf("prompt fx.%s: %v", p.Name, err)
		}
		want, _ := direct.GetPrompt(ctx, p.Name, args)
		if mustJSON(got.Messages) != mustJSON(want.Messages) {
			t.Errorf("prompt fx.%s: got %s want %s", p.Name, mustJSON(got), mustJSON(want))
		}
	}
}
