//go:build linux

package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// nerveIn runs the nerve binary against home's daemon and returns its
// output; wait is nil until it exits.
func nerveIn(t *testing.T, home string, args ...string) (out *bytes.Buffer, wait <-chan error) {
	t.Helper()
	cmd := exec.Command(testutil.BuildBinary(t, "./cmd/nerve"), args...)
	cmd.Env = append(os.Environ(), "NERVE_HOME="+home)
	out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return out, done
}

// TestREPLRequestWithdrawn: a server's form is on screen when the call
// that caused it ends (`nerve node interrupt` from another terminal); the
// dialog ends at once with one line saying why, and the person is back
// where they were — at the prompt with what they had typed, or in their
// own call, which reports its end. Tab offers nothing while answering.
func TestREPLRequestWithdrawn(t *testing.T) {
	home := t.TempDir()
	mcpserver := testutil.BuildBinary(t, "./fixtures/mcpserver")
	term := repl(t, home)
	t.Cleanup(func() { stopDaemon(t, home) })
	term.Line(":node add mcp fx -- " + mcpserver)
	term.WaitFor("mcp fx is READY", 20*time.Second)

	// At the prompt: another client's call asks the person.
	term.Type("@fx ec")
	waitLastLine(t, term, "default> @fx ec")
	callOut, callDone := nerveIn(t, home, "call", "@fx", "elicit", "message=Which colour?")
	term.WaitFor("? @fx asks you:\n  Which colour?", 10*time.Second)
	term.WaitFor("\nanswer>", 20*time.Second)
	// Tab completes node ids at the prompt, never in an answer.
	term.Type("@f")
	term.Keys("Tab")
	term.Type("!")
	waitLastLine(t, term, "answer> @f!")

	_, interrupted := nerveIn(t, home, "node", "interrupt", "fx")
	term.WaitFor("! @fx withdrew its request: the call ended", 10*time.Second)
	waitLastLine(t, term, "default> @fx ec")
	if err := <-interrupted; err != nil {
		t.Fatalf("nerve node interrupt: %v", err)
	}
	select {
	case err := <-callDone:
		if err == nil {
			t.Errorf("the interrupted nerve call succeeded:\n%s", callOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("nerve call still runs after the interrupt:\n%s", callOut)
	}
	if s := term.Screen(); strings.Contains(s, "no longer waits") || strings.Contains(s, "→ declined") {
		t.Errorf("the withdrawn dialog said more than why it ended:\n%s", s)
	}
	// The prompt reads on as usual: no Ctrl-C of the asker is left over.
	term.Type("ho hi")
	term.Keys("Enter")
	term.WaitFor("[1] @fx echo", 20*time.Second)

	// In the person's own call: the dialog ends, the call reports its end.
	term.Line(`@fx elicit message="Which shape?"`)
	term.WaitFor("Which shape?", 10*time.Second)
	term.WaitForCount("\nanswer>", 2, 20*time.Second)
	term.Type("squ")
	// The keys are read before the interrupt: typed after it, they would
	// land on the prompt that follows (as a person's would).
	waitLastLine(t, term, "answer> squ")
	_, interrupted = nerveIn(t, home, "node", "interrupt", "fx")
	term.WaitForCount("! @fx withdrew its request: the call ended", 2, 10*time.Second)
	s := term.WaitFor("error: call interrupted", 10*time.Second)
	if strings.Contains(s, "[2] @fx elicit") {
		t.Errorf("the interrupted call shows a result:\n%s", s)
	}
	if err := <-interrupted; err != nil {
		t.Fatalf("nerve node interrupt: %v", err)
	}
	waitLastLine(t, term, "default>")
	term.Line(`@fx echo text=after`)
	term.WaitFor("[2] @fx echo", 20*time.Second)
}
