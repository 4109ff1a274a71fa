package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/node"
)

// BenchmarkDirectIdentityCall is the baseline: one session call of
// echo.identity by qualified name, as a graph step makes it.
func BenchmarkDirectIdentityCall(b *testing.B) {
	s := newSession(b)
	ctx := context.Background()
	args := json.RawMessage(`{"text":"x"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.CallTool(ctx, "echo.identity", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func chain(n int) string {
	var s strings.Builder
	s.WriteString("steps:\n  s0: {call: echo.identity, args: {text: x}}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&s, "  s%d: {call: echo.identity, args: {text: \"${steps.s%d.text}\"}}\n", i, i-1)
	}
	return s.String()
}

// folders are where a benchmark's session keeps its run records: memory
// (none), or disk, as the daemon does — where each step something depends
// on is synced to disk before that starts.
func folders(b *testing.B, f func(b *testing.B, dir string)) {
	b.Run("memory", func(b *testing.B) { f(b, "") })
	b.Run("disk", func(b *testing.B) { f(b, b.TempDir()) })
}

// BenchmarkGraphChain1000 runs a chain of 1,000 identity steps through
// the session (target ≤ 50 ms per run). Its ns/op / 1000 minus
// BenchmarkDirectIdentityCall is the per-step overhead (target ≤ 20 µs).
func BenchmarkGraphChain1000(b *testing.B) {
	folders(b, func(b *testing.B, dir string) {
		s := newSessionIn(b, dir)
		addGraph(b, s, "chain", chain(1000))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			res, err := s.Call(ctx, "chain", &node.CallRequest{Tool: "run"})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}

// BenchmarkGraphOneStep is a graph of one identity step: the fixed cost
// of a run (schema check, run record, scheduling) on top of one call.
func BenchmarkGraphOneStep(b *testing.B) {
	folders(b, func(b *testing.B, dir string) {
		s := newSessionIn(b, dir)
		addGraph(b, s, "one", chain(1))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Call(ctx, "one", &node.CallRequest{Tool: "run"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGraphParallel8x20ms runs 8 independent 20 ms steps (target
// ≤ 1.5 × one step, 30 ms).
func BenchmarkGraphParallel8x20ms(b *testing.B) {
	folders(b, func(b *testing.B, dir string) {
		s := newSessionIn(b, dir)
		var src strings.Builder
		src.WriteString("steps:\n")
		for i := range 8 {
			fmt.Fprintf(&src, "  s%d: {call: zz.sleep, args: {ms: 20}}\n", i)
		}
		addGraph(b, s, "par", src.String())
		ctx := context.Background()
		for b.Loop() {
			if _, err := s.Call(ctx, "par", &node.CallRequest{Tool: "run"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
