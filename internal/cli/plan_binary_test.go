//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

const (
	planWrong = "name: greet\n```yaml\nsteps:\n  hi: {call: echo.identiy, args: {text: hello}}\n```\n"
	planRight = "name: greet\n```yaml\nsteps:\n  hi: {call: echo.identity, args: {text: hello}}\n  again: {call: echo.identity, args: {text: \"${steps.hi.text} again\"}}\noutput: \"${steps.again.text}\"\n```\n"
)

// TestPlanBinary: `nerve plan` through the real binary against the
// scripted OpenAI-compatible server: the first draft is wrong and goes
// back with its mistakes, the second is right, shown with its picture and
// saved with --yes, and runs; a model that is always wrong is given up
// on after three drafts with their mistakes, nothing saved; without a
// terminal and without --yes nothing is saved (issue 30, item 4).
func TestPlanBinary(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	if _, errs, code := n.Run("plan", "greet", "me"); code == 0 || !strings.Contains(errs, "nerve node add llm") {
		t.Fatalf("plan without an llm node: exit %d\n%s", code, errs)
	}
	srv := llmserver.Start()
	t.Cleanup(srv.Close)
	n.Must("node", "add", "llm", "planner", "--base-url", srv.URL, "--model", "m")

	srv.Add(
		llmserver.Turn{Text: planWrong, Check: func(r *llmserver.Request) error {
			if len(r.Messages) == 0 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].Text(), "echo.identity(text: str)") {
				return fmt.Errorf("the system prompt does not show echo.identity's signature: %+v", r.Messages)
			}
			if r.Last().Text() != "greet me twice" {
				return fmt.Errorf("the request is %q", r.Last().Text())
			}
			return nil
		}},
		llmserver.Turn{Text: planRight, Check: func(r *llmserver.Request) error {
			if last := r.Last().Text(); !strings.Contains(last, "step hi calls echo.identiy: no such tool; did you mean echo.identity?") {
				return fmt.Errorf("the mistakes did not go back to the model: %q", last)
			}
			return nil
		}},
	)
	out, errs, code := n.Run("plan", "--yes", "greet", "me", "twice")
	if code != 0 || !strings.Contains(out, "again: {call: echo.identity") || !strings.Contains(out, "── again  echo.identity  ← hi") ||
		!strings.Contains(errs, "draft 1 (graph greet) has 1 mistake(s)") || !strings.Contains(errs, "graph greet added") {
		t.Fatalf("plan: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if got := n.Must("call", "@greet", "run"); got != "hello again\n" {
		t.Errorf("the saved graph answered %q", got)
	}

	// Always wrong: three drafts, then the mistakes; nothing saved.
	srv.Add(llmserver.Turn{Text: planWrong}, llmserver.Turn{Text: planWrong}, llmserver.Turn{Text: planWrong})
	out, errs, code = n.Run("plan", "--yes", "--name", "greet2", "greet", "me")
	if code != 1 || !strings.Contains(errs, "no draft passed the checks in 3 attempts") || !strings.Contains(errs, "2:14: step hi calls echo.identiy: no such tool") ||
		!strings.Contains(out, "echo.identiy") || srv.Remaining() != 0 {
		t.Fatalf("an always-wrong model: exit %d, %d turns left\nstdout: %s\nstderr: %s", code, srv.Remaining(), out, errs)
	}
	// No terminal, no --yes: shown, not saved.
	srv.Add(llmserver.Turn{Text: planRight})
	out, errs, code = n.Run("plan", "--name", "greet3", "greet", "me")
	if code == 0 || !strings.Contains(out, "graph greet3") || !strings.Contains(errs, "no terminal to ask on; run it again with --yes") {
		t.Fatalf("plan without a terminal: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// --json: the draft as data; saved only with --yes.
	srv.Add(llmserver.Turn{Text: planRight})
	var draft struct {
		Name, Kind, Source, Graph string
		Saved                     bool
	}
	if err := json.Unmarshal([]byte(n.Must("--json", "plan", "greet", "me")), &draft); err != nil || draft.Name != "greet-2" || draft.Kind != "graph" || draft.Saved || !strings.Contains(draft.Graph, "echo.identity") {
		t.Errorf("--json plan: %v %+v", err, draft)
	}
	if ls := n.Must("graph", "ls"); strings.Contains(ls, "greet2") || strings.Contains(ls, "greet3") || strings.Contains(ls, "greet-2") || !strings.Contains(ls, "greet") {
		t.Errorf("graph ls after the plans:\n%s", ls)
	}
}

// TestTmuxCommanderPlan: `:plan SENTENCE` in the Commander is the same
// command: the draft and its picture on screen, then a question on the
// Commander's own prompt line; the person's y saves it.
func TestTmuxCommanderPlan(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	srv := llmserver.Start(llmserver.Turn{Text: planRight})
	t.Cleanup(srv.Close)
	n.Must("node", "add", "llm", "planner", "--base-url", srv.URL, "--model", "m")
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)
	term.Line(":plan greet me twice")
	s := term.WaitForAfter(":plan greet me twice", "save it as graph greet? [y/N]", 30*time.Second)
	if !strings.Contains(s, "── again  echo.identity  ← hi") {
		t.Errorf("the draft's picture is not on screen:\n%s", s)
	}
	term.Line("y")
	term.WaitForAfter("[y/N] y", "graph greet added", 20*time.Second)
	if ls := n.Must("graph", "ls"); !strings.Contains(ls, "greet") {
		t.Errorf("graph ls after :plan:\n%s", ls)
	}
}
