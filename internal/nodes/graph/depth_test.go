package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// TestCallDepthReasonShownOnce: a chain of graphs deeper than the call
// limit fails with the limit's reason and its chain said once, and the
// graphs it went through listed short; each graph nested the next one's
// message, and the reason was cut off behind eight "graph … failed at step
// …" (issue 27 item 6).
func TestCallDepthReasonShownOnce(t *testing.T) {
	s := newSession(t)
	last := node.MaxCallDepth + 1
	addGraph(t, s, fmt.Sprintf("c%d", last), "steps:\n  s: {call: echo.identity, args: {text: deep}}\n")
	for i := last - 1; i >= 1; i-- {
		addGraph(t, s, fmt.Sprintf("c%d", i), fmt.Sprintf("steps:\n  s: {call: c%d.run}\n", i+1))
	}
	res, err := s.Call(context.Background(), "c1", &node.CallRequest{Tool: "run"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	want := "graph c1 failed at step s: @c17 run: calls nest more than 16 deep (the limit): test/c1 → test/c2 → "
	if !res.IsError || !strings.HasPrefix(text, want) {
		t.Fatalf("result %v %q; want it to start %q", res.IsError, text, want)
	}
	if n := strings.Count(text, "failed at step"); n != 1 {
		t.Errorf("%d \"failed at step\" in %q; want one", n, text)
	}
	if n := strings.Count(text, "calls nest more than"); n != 1 {
		t.Errorf("the reason is said %d times in %q", n, text)
	}
	if !strings.Contains(text, "(through c2 at step s → c3 at step s → 12 more → c16 at step s; run c1.") {
		t.Errorf("the graphs it went through are not listed short: %q", text)
	}
}
