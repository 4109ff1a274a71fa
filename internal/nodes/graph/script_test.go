package graph_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// TestScriptStep: a script step reads the run's inputs and the result of
// the step it names as data — an input that looks like code stays a
// string — calls tools as the session's calls, and its result is the
// step's (issue 30, item 3).
func TestScriptStep(t *testing.T) {
	s := newSession(t)
	addGraph(t, s, "g", `inputs: {word: string}
steps:
  first: {call: echo.identity, args: {text: "${inputs.word}"}}
  twice:
    script: |
      a = steps["first"]["text"]
      b = echo.identity(text=a + a)
      result = {"word": inputs["word"], "twice": b, "calls": len([c for c in [a, b] if c])}
output: "${steps.twice.structured}"
`)
	word := `") + fail("injected`
	args, _ := json.Marshal(map[string]any{"word": word})
	res, err := s.Call(context.Background(), "g", &node.CallRequest{Tool: "run", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	got, _ := json.Marshal(res.StructuredContent)
	want, _ := json.Marshal(map[string]any{"word": word, "twice": word + word, "calls": 2})
	if string(got) != string(want) {
		t.Errorf("output %s, want %s", got, want)
	}
}

// TestScriptStepFails: a script that fails fails its step and the run,
// the error placed in the graph's source; with foreach the script runs
// once per item, item its global.
func TestScriptStepFails(t *testing.T) {
	s := newSession(t)
	addGraph(t, s, "bad", "steps:\n  a:\n    script: |\n      x = 1\n      fail(\"no good\")\n")
	res, err := s.Call(context.Background(), "bad", &node.CallRequest{Tool: "run"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "step a: the script failed: fail: no good (script line 2, 5:11 in the graph)") {
		t.Errorf("a failing script: %v %q", res.IsError, text)
	}

	addGraph(t, s, "each", "steps:\n  a:\n    foreach: [x, y]\n    script: 'result = echo.identity(text=item + \"!\")'\n")
	res, err = s.Call(context.Background(), "each", &node.CallRequest{Tool: "run"})
	if err != nil || res.IsError {
		t.Fatalf("foreach script: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "x!\ny!" {
		t.Errorf("foreach script's output %q", text)
	}
}
