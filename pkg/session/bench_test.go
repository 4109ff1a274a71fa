package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// BenchmarkSessionCallIdentity measures the whole session call path —
// lookup, argument validation, state moves, the node — to a node that
// costs nothing. Target: ≥ 300k calls/s and ≤ 10 allocs per call.
func BenchmarkSessionCallIdentity(b *testing.B) {
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	s := session.New("bench", reg, nil)
	defer s.Close(context.Background())
	ctx := context.Background()
	if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionCallIdentityParallel is the same from many goroutines.
func BenchmarkSessionCallIdentityParallel(b *testing.B) {
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	s := session.New("bench", reg, nil)
	defer s.Close(context.Background())
	ctx := context.Background()
	if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
