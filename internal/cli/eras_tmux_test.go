//go:build unix

package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestTmuxCommanderAnswersBothEras: a server of MCP 2026-07-28 asks for
// input by answering input_required, one of 2025-11-25 by a request of its
// own in the middle of the call; the person at the Commander meets the
// same form for both, and the answer reaches the server either way —
// from a call typed at the prompt and from a graph's step, beside the
// graph's own ask: gate (issue 29 item 3). A call its server runs as a
// task shows the task's status as it goes. The real binary, in a
// terminal, through its daemon; fixtures/mcpserver speaks both eras.
func TestTmuxCommanderAnswersBothEras(t *testing.T) {
	n := newRealNerve(t)
	fx := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "modern", "--", fx, "--protocol", "2026-07-28")
	n.Must("node", "add", "mcp", "legacy", "--protocol", "2025-11-25", "--", fx)
	if out := n.Must("node", "info", "modern"); !strings.Contains(out, "2026-07-28") {
		t.Errorf("node info modern does not show protocol 2026-07-28:\n%s", out)
	}
	if out := n.Must("node", "info", "legacy"); !strings.Contains(out, "2025-11-25") {
		t.Errorf("node info legacy does not show protocol 2025-11-25:\n%s", out)
	}
	n.Must("graph", "add", "both", "--from", writeFile(t, filepath.Join(n.home, "both.yaml"), `
steps:
  colour: {call: modern.elicit, args: {message: "Colour for the graph?"}}
  approve: {ask: "Ship ${steps.colour.text}?", after: colour}
`))
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)

	for i, era := range []string{"modern", "legacy"} {
		line := "@" + era + ` elicit message="Which colour, ` + era + `?"`
		term.Line(line)
		s := term.WaitForAfter(line, "answer>", 30*time.Second)
		if !strings.Contains(s, "? @"+era+" asks you:\n  Which colour, "+era+"?") {
			t.Errorf("%s: the question is not on screen:\n%s", era, s)
		}
		term.Line("teal " + era)
		term.WaitForAfter("answer> teal "+era, "[s]ubmit", 20*time.Second)
		term.Line("s")
		s = term.WaitForAfter(line, "["+string(rune('1'+i))+"] @"+era+" elicit", 20*time.Second)
		if !strings.Contains(s, "user answered: teal "+era) {
			t.Errorf("%s: the server did not get the answer:\n%s", era, s)
		}
	}

	// A graph: its step's server (2026-07-28) asks, then its own gate.
	term.Line("@both run")
	s := term.WaitForAfter("@both run", "answer>", 30*time.Second)
	if !strings.Contains(s, "Colour for the graph?") {
		t.Errorf("the step's question is not on screen:\n%s", s)
	}
	term.Line("amber")
	term.WaitForAfter("answer> amber", "[s]ubmit", 20*time.Second)
	term.Line("s")
	s = term.WaitForAfter("answer> amber", "Ship user answered: amber?", 30*time.Second)
	term.WaitForAfter("Ship user answered: amber?", "answer>", 20*time.Second)
	term.Line("yes")
	term.WaitForAfter("answer> yes", "[s]ubmit", 20*time.Second)
	term.Line("s")
	s = term.WaitForAfter("answer> yes", "[3] @both run", 30*time.Second)
	if strings.Contains(s, "failed") {
		t.Errorf("the graph failed:\n%s", s)
	}

	// A call its server turns into a task: its status is the call's
	// progress, at the Commander and in `nerve call`.
	n.Must("node", "add", "mcp", "tasks", "--", fx, "--protocol", "2026-07-28", "--tasks")
	term.Line("@tasks task_job steps=4 ms=400")
	term.WaitForAfter("@tasks task_job", "working: step", 20*time.Second)
	s = term.WaitForAfter("@tasks task_job steps=4 ms=400", "[4] @tasks task_job", 20*time.Second)
	if !strings.Contains(s, "job done after 4 steps") {
		t.Errorf("the task's result is not shown:\n%s", s)
	}
	out, errs, code := n.Run("call", "@tasks", "task_job", "steps=2", "ms=200")
	if code != 0 || !strings.Contains(out, "job done after 2 steps") || !strings.Contains(errs, "@tasks: task ") || !strings.Contains(errs, "working: step") {
		t.Errorf("nerve call of a task: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
