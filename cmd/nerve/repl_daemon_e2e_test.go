//go:build linux

package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestREPLRestartsStoppedDaemon: an open Commander whose daemon was stopped
// from outside starts it again on the next line, as any nerve command
// would, and says so. Its messages name commands in its own syntax
// (`:node restart sh`, not the shell's `nerve node restart sh`).
func TestREPLRestartsStoppedDaemon(t *testing.T) {
	home := t.TempDir()
	term := repl(t, home)
	t.Cleanup(func() { stopDaemon(t, home) })
	term.Line(":node add bash sh")
	term.WaitFor("bash sh is READY", 20*time.Second)

	// A node in ERROR (its shell killed between calls): the message says
	// so, in the REPL's syntax.
	killIdleShell(t, home, "sh")
	term.Line("@sh echo hi")
	s := term.WaitForAfter("@sh echo hi", "`:node restart sh`", 10*time.Second)
	if !strings.Contains(s, `node "sh" is ERROR`) || strings.Contains(s, "nerve node restart") || strings.Contains(s, "no such tool") {
		t.Errorf("a call to a node in ERROR:\n%s", s)
	}
	term.Line(":node restart sh")
	term.WaitForAfter(":node restart sh", "READY", 10*time.Second)

	stopDaemon(t, home)
	// The wait looks past the typed line: its echo holds the text too
	// (this test passed before the answer came, and failed 1 in 3).
	term.Line("@sh echo back again")
	s = term.WaitForAfter("@sh echo back again", "back again\n", 30*time.Second)
	if !strings.Contains(s, "the daemon had stopped; started it again") {
		t.Errorf("no notice that the daemon was started again:\n%s", s)
	}
	// And it keeps working.
	term.Line("@sh echo once more")
	term.WaitForAfter("@sh echo once more", "once more\n", 10*time.Second)
}

// killIdleShell kills bash node id's shell with SIGKILL between calls and
// waits until the node is ERROR.
func killIdleShell(t *testing.T, home, id string) {
	t.Helper()
	bin := testutil.BuildBinary(t, "./cmd/nerve")
	info := func() node.Info {
		cmd := exec.Command(bin, "--json", "node", "info", id)
		cmd.Env = append(os.Environ(), "NERVE_HOME="+home, "NERVE_SESSION=")
		out, err := cmd.Output()
		var d struct{ Info node.Info }
		if err != nil || json.Unmarshal(out, &d) != nil {
			t.Fatalf("nerve node info %s: %v: %s", id, err, out)
		}
		return d.Info
	}
	pid, _ := info().Details["pid"].(float64)
	if pid == 0 || syscall.Kill(int(pid), syscall.SIGKILL) != nil {
		t.Fatalf("no shell of %s to kill (pid %v)", id, pid)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { return info().State == node.Error }, "the node to be ERROR")
}
