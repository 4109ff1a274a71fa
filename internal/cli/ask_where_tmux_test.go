//go:build unix

package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestTmuxAskFromCLISaysWhere: a graph's ask: step run with `nerve call`
// while a Commander is open elsewhere: the question goes to that
// Commander, and `nerve call` says so on stderr, with which Commander and
// what to do; it waited silently (issue 27 item 6). Answered there, the
// run goes on and `nerve call` prints its output.
func TestTmuxAskFromCLISaysWhere(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "gate", "--from", writeFile(t, filepath.Join(n.home, "gate.yaml"), `
steps:
  approve: {ask: "Ship it?"}
  say: {call: echo.identity, args: {text: "answer: ${steps.approve.text}"}}
`))
	term := n.Commander()

	cmd := n.Command("call", "@gate", "run")
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	testutil.WaitFor(t, 30*time.Second, func() bool { return strings.Contains(errb.String(), "the question went to") }, "nerve call to say where the question went")
	if got := errb.String(); !strings.Contains(got, "@gate ? approve: the question went to the Commander (pid ") || !strings.Contains(got, "answer it there (Ctrl-C here cancels the run)") {
		t.Errorf("nerve call's stderr:\n%s", got)
	}
	term.WaitFor("Ship it?", 30*time.Second)
	term.WaitFor("answer>", 30*time.Second)
	term.Line("yes")
	term.WaitForAfter("answer> yes", "[s]ubmit", 20*time.Second)
	term.Line("s")
	select {
	case err := <-done:
		if err != nil || out.String() != "answer: yes\n" {
			t.Errorf("nerve call @gate run: %v, stdout %q, stderr %q", err, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nerve call did not end once the question was answered")
	}
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
