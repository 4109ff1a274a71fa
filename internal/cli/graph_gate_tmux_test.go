//go:build unix

package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestTmuxCommanderAnswersGraphGate: a graph's `ask:` step, run from the
// Commander, puts its question to the person at the Commander as a form;
// what they type goes on into the graph, and a gate they decline fails
// the run, saying so (issue 17, item 4). The real binary, in a terminal,
// through its daemon.
func TestTmuxCommanderAnswersGraphGate(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "gate", "--from", writeFile(t, filepath.Join(n.home, "gate.yaml"), `
inputs: {file: string}
steps:
  approve: {ask: "Publish ${inputs.file}?"}
  say: {call: echo.identity, args: {text: "answer: ${steps.approve.text}"}}
`))
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)

	// Answered: the answer is the step's text.
	term.Line("@gate file=a.txt")
	s := term.WaitForAfter("@gate file=a.txt", "answer>", 30*time.Second)
	if !strings.Contains(s, "? @gate asks you:\n  Publish a.txt?") {
		t.Errorf("the gate's question is not on screen:\n%s", s)
	}
	term.Line("ship it")
	term.WaitForAfter("answer> ship it", "[s]ubmit", 20*time.Second)
	term.Line("s")
	s = term.WaitForAfter("elicit> s", "[1] @gate run", 20*time.Second)
	if !strings.Contains(s, "\nanswer: ship it\n") {
		t.Errorf("the graph's result does not carry the typed answer:\n%s", s)
	}

	// Declined: the run fails at the gate, naming it.
	term.Line("@gate file=b.txt")
	s = term.WaitForAfter("@gate file=b.txt", "answer>", 30*time.Second)
	if !strings.Contains(s, "Publish b.txt?") {
		t.Errorf("the second gate's question is not on screen:\n%s", s)
	}
	term.Line("")
	term.WaitForAfter("@gate file=b.txt", "[s]ubmit", 20*time.Second)
	term.Line("d")
	s = term.WaitForAfter("elicit> d", "[2] @gate run", 20*time.Second)
	if !strings.Contains(s, "graph gate failed at step approve: the person declined") || strings.Contains(s, "answer: ") {
		t.Errorf("a declined gate did not fail the run at the gate:\n%s", s)
	}
	if out := n.Must("graph", "runs", "gate"); !strings.Contains(out, "finished  ") || !strings.Contains(out, "  failed  ") || !strings.Contains(out, "1 failed, 1 pending") {
		t.Errorf("graph runs after a gate answered and one declined:\n%s", out)
	}
}
