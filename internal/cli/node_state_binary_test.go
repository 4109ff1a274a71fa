//go:build unix

package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryStoppedNodesTools: a node that is not running is never shown
// as if a call would just work. Stopped with `nerve node stop`, `node ls`
// said "starts on its first call" (it does not), and `nerve tools`, `nerve
// call @n ?` and the Commander's `@n ?` listed its tools unmarked; after a
// daemon restart a lazy node's tools are marked, with what its first call
// does (issue 27 item 6).
func TestBinaryStoppedNodesTools(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "ms", "--", server)
	n.Must("node", "stop", "ms")

	if ls := n.Must("node", "ls"); !regexp.MustCompile(`(?m)^ms +mcp +STOPPED `).MatchString(ls) || strings.Contains(ls, "first call") {
		t.Errorf("node ls of a stopped node:\n%s", ls)
	}
	stopped := "@ms is STOPPED: a call fails until `nerve node start ms` starts it"
	// Its tools stay listed, marked (issue 27 item 1: a tool listed once
	// stays listed whatever its node's state).
	out, errs, code := n.Run("tools")
	if code != 0 || !regexp.MustCompile(`(?m)^ms\.echo +\[STOPPED\] `).MatchString(out) || !strings.Contains(errs, stopped) {
		t.Errorf("nerve tools with ms stopped: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	out, errs, code = n.Run("call", "@ms", "?")
	if code != 0 || !strings.Contains(out, "  echo ") || !strings.Contains(errs, stopped) {
		t.Errorf("nerve call @ms ? with ms stopped: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	out, errs, code = n.Run("tools", "ms")
	if code != 0 || !regexp.MustCompile(`(?m)^ms\.echo +\[STOPPED\] `).MatchString(out) || !strings.Contains(errs, stopped) {
		t.Errorf("nerve tools ms with ms stopped: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// Started, then the daemon restarts: ms is lazy (CREATED, catalogued).
	n.Must("node", "start", "ms")
	n.Must("daemon", "stop")
	lazy := "@ms is CREATED: its tools come from its catalogue, and its first call starts it"
	out, errs, code = n.Run("tools")
	if code != 0 || !regexp.MustCompile(`(?m)^ms\.echo +\[CREATED\] `).MatchString(out) || !strings.Contains(errs, lazy) {
		t.Errorf("nerve tools with ms lazy: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	term := n.Commander()
	term.Line("@ms ?")
	s := term.WaitForAfter("> @ms ?", "default>", 20*time.Second)
	if !strings.Contains(s, "  echo ") || !strings.Contains(s, lazy) {
		t.Errorf("@ms ? in the Commander with ms lazy:\n%s", s)
	}
	// Its first call starts it, as the note says.
	if out := n.Must("call", "@ms", "echo", "text=hi"); out != "hi\n" {
		t.Errorf("the first call of a lazy node: %q", out)
	}
	if out, errs, _ := n.Run("tools"); strings.Contains(out, "[") || strings.Contains(errs, "@ms") {
		t.Errorf("nerve tools with ms running still marks it:\n%s\n%s", out, errs)
	}
}
