package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/internal/testutil/spantest"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestCallSpan: with tracing on, each call through the session is an
// execute_tool span with its node, tool, caller and outcome; a call that
// fails says why in error.type, and never a word of its arguments.
func TestCallSpan(t *testing.T) {
	rec := spantest.Record(t)
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	s := session.New("work", reg, nil)
	defer s.Close(context.Background())
	ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerMCP, Name: "claude"})
	if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"secret"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"txet":"secret"}`)}); !errors.Is(err, node.ErrBadArgs) {
		t.Fatalf("a call with a misspelt argument: %v", err)
	}
	spans := rec.Named("execute_tool echo.identity")
	if len(spans) != 2 {
		t.Fatalf("%d spans named execute_tool echo.identity, want 2: %v", len(spans), rec.Ended())
	}
	for i, want := range []map[string]string{
		{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "identity", "nerve.session": "work", "nerve.node": "echo", "nerve.caller": "mcp:claude", "nerve.call.outcome": telemetry.OutcomeOK, "error.type": ""},
		{"nerve.call.outcome": telemetry.OutcomeError, "error.type": "bad_arguments"},
	} {
		for k, v := range want {
			if got := spantest.Attr(spans[i], k); got != v {
				t.Errorf("span %d: %s = %q, want %q", i, k, got, v)
			}
		}
		for _, kv := range spans[i].Attributes() {
			if v := kv.Value.Emit(); v == "secret" {
				t.Errorf("span %d carries an argument: %s=%s", i, kv.Key, v)
			}
		}
	}
}
