package codemode_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// identitySession is a session of one identity node, echo: a tool that
// costs nothing itself, so what is measured is the path to it.
func identitySession(b *testing.B) *session.Session {
	b.Helper()
	s := session.New("bench", all.Registry(nil), &session.Options{Dir: b.TempDir()})
	b.Cleanup(func() { s.Close(context.Background()) })
	if _, err := s.Add(context.Background(), node.Spec{ID: "echo", Kind: "identity"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSessionToolCall is one call of echo.identity through the
// session by name, as a script's call reaches it: the baseline.
func BenchmarkSessionToolCall(b *testing.B) {
	s := identitySession(b)
	ctx := context.Background()
	args := json.RawMessage(`{"text":"x"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.CallTool(ctx, "echo.identity", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// thousand is a script of 1,000 calls.
const thousand = `
n = 0
for i in range(1000):
    r = echo.identity(text="x")
    n += len(r)
result = n
`

// BenchmarkScript1000Calls runs a script of 1,000 calls of echo.identity
// per op; ns/call is one call from the script, whose difference from
// BenchmarkSessionToolCall is a script call's overhead (goal ≤ 20 µs).
func BenchmarkScript1000Calls(b *testing.B) {
	s := identitySession(b)
	opts := &codemode.Options{Tools: s, Limits: codemode.Limits{Calls: 1000}}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		res, err := codemode.Run(context.Background(), thousand, opts)
		if err != nil || res.Calls != 1000 {
			b.Fatal(err, res.Calls)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*1000), "ns/call")
}

// BenchmarkScriptOneCall is a whole run of a one-call script: compile,
// the names of the session's tools, the call, the answer.
func BenchmarkScriptOneCall(b *testing.B) {
	s := identitySession(b)
	opts := &codemode.Options{Tools: s}
	b.ReportAllocs()
	for b.Loop() {
		res, err := codemode.Run(context.Background(), `result = echo.identity(text="x")`, opts)
		if err != nil || res.Value != "x" {
			b.Fatal(err)
		}
		_ = codemode.ToolResult(res, err)
	}
}
