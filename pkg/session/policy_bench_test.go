package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// benchIdentity is a session with identity node echo, for the benchmarks
// of the issue 32 paths against BenchmarkSessionCallIdentity.
func benchIdentity(b *testing.B) *session.Session {
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	s := session.New("bench", reg, nil)
	b.Cleanup(func() { s.Close(context.Background()) })
	if _, err := s.Add(context.Background(), node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSessionCallOverridden calls a renamed tool with a fixed
// argument: the node is called by its own name with the value merged in.
func BenchmarkSessionCallOverridden(b *testing.B) {
	s := benchIdentity(b)
	ctx := context.Background()
	if _, err := s.SetOverride(ctx, "echo", "identity", api.ToolOverride{Name: "say",
		Fixed: map[string]json.RawMessage{"text": json.RawMessage(`"hello"`)}}, false); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "say", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionCallPolicyAllow is an agent's call under a policy of
// three rules that lets it run.
func BenchmarkSessionCallPolicyAllow(b *testing.B) {
	s := benchIdentity(b)
	if err := s.SetSettings(session.Settings{Policy: "fs.write_*=ask,*.delete_*=deny,echo=allow"}); err != nil {
		b.Fatal(err)
	}
	ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerMCP, Name: "bench"})
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}
