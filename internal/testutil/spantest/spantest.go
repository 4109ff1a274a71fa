// Package spantest turns nerve's tracing on (internal/telemetry) for a
// test, recording the spans in memory with the OpenTelemetry SDK, and
// draws a trace as a tree of span names to compare. Test-only.
package spantest

import (
	"context"
	"sort"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/nerve-dev/nerve/internal/telemetry"
)

// Recorder holds the spans ended while tracing is on for a test.
type Recorder struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

// Record turns tracing on until t ends, every span sampled. Tracing is
// process-wide: a test that records must not run in parallel with
// another that does.
func Record(t testing.TB) *Recorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	telemetry.Install(tp)
	t.Cleanup(func() {
		telemetry.Install(nil)
		_ = tp.Shutdown(context.Background())
	})
	return &Recorder{rec: rec, tp: tp}
}

// Ended returns the spans ended so far.
func (r *Recorder) Ended() []sdktrace.ReadOnlySpan { return r.rec.Ended() }

// Named returns the ended spans whose name is name.
func (r *Recorder) Named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Tree draws the ended spans of trace id as an indented tree of names,
// children sorted by name: "a\n  b\n    c\n".
func (r *Recorder) Tree(id trace.TraceID) string {
	kids := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	ids := map[trace.SpanID]bool{}
	spans := []sdktrace.ReadOnlySpan{}
	for _, s := range r.rec.Ended() {
		if s.SpanContext().TraceID() == id {
			spans = append(spans, s)
			ids[s.SpanContext().SpanID()] = true
		}
	}
	for _, s := range spans {
		if p := s.Parent().SpanID(); s.Parent().IsValid() && ids[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var draw func(ss []sdktrace.ReadOnlySpan, depth int)
	draw = func(ss []sdktrace.ReadOnlySpan, depth int) {
		sort.Slice(ss, func(i, j int) bool { return ss[i].Name() < ss[j].Name() })
		for _, s := range ss {
			b.WriteString(strings.Repeat("  ", depth) + s.Name() + "\n")
			draw(kids[s.SpanContext().SpanID()], depth+1)
		}
	}
	draw(roots, 0)
	return b.String()
}

// Attr returns the value of attribute key on s as a string ("" if unset).
func Attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
