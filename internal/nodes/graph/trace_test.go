package graph_test

import (
	"context"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil/spantest"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestGraphRunTrace: with tracing on, a run of a three-step graph is one
// trace: the session's call of the graph, the run under it, each step
// under the run and each step's call under its step (issue 31, item 3).
func TestGraphRunTrace(t *testing.T) {
	rec := spantest.Record(t)
	s := newSession(t)
	addGraph(t, s, "g", "steps:\n  a: {call: echo.identity, args: {text: one}}\n  b: {call: echo.identity, args: {text: two}, after: [a]}\n  c: {call: echo.identity, args: {text: three}, after: [a]}\n")
	if _, err := s.Call(context.Background(), "g", &node.CallRequest{Tool: "run"}); err != nil {
		t.Fatal(err)
	}
	runs := rec.Named("graph run g")
	if len(runs) != 1 {
		t.Fatalf("%d graph run spans, want 1; spans: %v", len(runs), rec.Ended())
	}
	want := `execute_tool g.run
  graph run g
    graph step a
      execute_tool echo.identity
    graph step b
      execute_tool echo.identity
    graph step c
      execute_tool echo.identity
`
	if got := rec.Tree(runs[0].SpanContext().TraceID()); got != want {
		t.Errorf("the run's trace:\n%s\nwant\n%s", got, want)
	}
	if got := spantest.Attr(runs[0], "nerve.graph.run"); got == "" {
		t.Errorf("the run's span has no nerve.graph.run")
	}
	for _, sp := range rec.Named("execute_tool echo.identity") {
		if c := spantest.Attr(sp, "nerve.caller"); c != "graph:g/a" && c != "graph:g/b" && c != "graph:g/c" {
			t.Errorf("a step's call has caller %q", c)
		}
	}
}
