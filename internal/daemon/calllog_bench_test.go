package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nerve-dev/nerve/pkg/node"
)

// BenchmarkSessionCallLogged is a session call of an identity node with
// and without the call log: what logging every call (issue 22, item 9)
// costs each one.
func BenchmarkSessionCallLogged(b *testing.B) {
	for _, tc := range []struct {
		name string
		log  bool
	}{{"nolog", false}, {"log", true}} {
		b.Run(tc.name, func(b *testing.B) {
			opts := &Options{Registry: testRegistry()}
			if tc.log {
				opts.CallLog = filepath.Join(b.TempDir(), "calls.jsonl")
			}
			d, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			defer d.Close(ctx)
			s, err := d.session(ctx, DefaultSession, true)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: "identity"}); err != nil {
				b.Fatal(err)
			}
			ctx = node.WithCaller(ctx, node.Caller{Kind: node.CallerMCP, Name: "bench", Via: "stdio"})
			args := []byte(`{"text":"hi"}`)
			for b.Loop() {
				if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
