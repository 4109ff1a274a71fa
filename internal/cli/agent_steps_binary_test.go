//go:build unix

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
)

// TestBinaryAgentSteps: an llm node's steps (the scripted OpenAI-compatible
// fixture asks for a tool call) are shown as a person reads them — on
// `nerve call`'s stderr, which showed none, and in the Commander, which
// showed their raw JSON (issue 27 item 6).
func TestBinaryAgentSteps(t *testing.T) {
	ask := func() []llmserver.Turn {
		return []llmserver.Turn{
			{ToolCalls: []llmserver.ToolCall{{ID: "c1", Name: "id__identity", Arguments: `{"text":"hi there"}`}}},
			{Text: "the tool said hi there"},
		}
	}
	s := llmserver.Start(append(ask(), ask()...)...)
	t.Cleanup(s.Close)
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "id")
	n.Must("node", "add", "llm", "ag", "--base-url", s.URL, "--model", "m", "--tools", "id", "--stream=false")

	out, errs, code := n.Run("call", "@ag", "use", "the", "tool")
	if code != 0 || !strings.Contains(out, "the tool said hi there") {
		t.Fatalf("nerve call @ag: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	for _, want := range []string{"@ag → id.identity text=\"hi there\"\n", "@ag ← id.identity: hi there\n"} {
		if !strings.Contains(errs, want) {
			t.Errorf("nerve call @ag's stderr lacks %q:\n%s", want, errs)
		}
	}

	term := n.Commander()
	term.Line("@ag use the tool again")
	screen := term.WaitForAfter("> @ag use the tool again", "[1] @ag", 30*time.Second)
	for _, want := range []string{"→ id.identity text=\"hi there\"", "← id.identity: hi there", "the tool said hi there"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the Commander's screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, `{"step"`) || strings.Contains(screen, `"arguments"`) {
		t.Errorf("the Commander shows a step's raw JSON:\n%s", screen)
	}
}
