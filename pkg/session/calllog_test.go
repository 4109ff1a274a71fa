package session_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestOnCallHearsEveryCallOnce: Options.OnCall is told of each call once,
// by Call and by CallTool, failed ones included, with the caller the
// call's context carries.
func TestOnCallHearsEveryCallOnce(t *testing.T) {
	var mu sync.Mutex
	var got []session.CallInfo
	s := newSession(t, nil, &session.Options{OnCall: func(_ context.Context, c *session.CallInfo) {
		mu.Lock()
		got = append(got, *c)
		mu.Unlock()
	}})
	add(t, s, "echo", identity.Kind)
	cli := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerCLI})
	agent := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerLLM, Name: "agent"})
	if _, err := s.Call(cli, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(agent, "echo.identity", json.RawMessage(`{"text":"b"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(cli, "echo", &node.CallRequest{Tool: "nope"}); err == nil {
		t.Fatal("a call of an unknown tool succeeded")
	}
	if _, err := s.Call(context.Background(), "ghost", &node.CallRequest{Tool: "identity"}); err == nil {
		t.Fatal("a call of an unknown node succeeded")
	}
	want := []struct {
		node, tool, args, caller string
		failed                   bool
	}{
		{"echo", "identity", `{"text":"a"}`, "cli", false},
		{"echo", "identity", `{"text":"b"}`, "llm:agent", false},
		{"echo", "nope", ``, "cli", true},
		{"ghost", "identity", ``, "?", true},
	}
	if len(got) != len(want) {
		t.Fatalf("OnCall heard %d calls, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Node != w.node || g.Tool != w.tool || string(g.Arguments) != w.args || g.Caller.String() != w.caller || (g.Err != nil) != w.failed {
			t.Errorf("call %d: %s.%s %s by %s err %v; want %s.%s %s by %s failed %v", i, g.Node, g.Tool, g.Arguments, g.Caller, g.Err, w.node, w.tool, w.args, w.caller, w.failed)
		}
		if g.Err == nil && (g.Result == nil || g.Start.IsZero()) {
			t.Errorf("call %d: no result or start time", i)
		}
	}
}
