//go:build linux

package main_test

import (
	"strings"
	"testing"
	"time"
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

	// A node in ERROR: the message says so, in the REPL's syntax.
	term.Line("@sh exit 3")
	term.WaitForAfter("@sh exit 3", "exited with status 3", 10*time.Second)
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
