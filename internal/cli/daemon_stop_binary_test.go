//go:build unix

package cli

import (
	"strings"
	"sync"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryDaemonStopThenCommand: `nerve daemon stop && nerve node ls`,
// ten times in a row, with a node that is slow to stop. stop returned while the daemon was still exiting, so
// the next command's new daemon found the lock taken ("a nerve daemon is
// already running … nerve.lock is locked").
func TestBinaryDaemonStopThenCommand(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	// A server that outlives the end of its stdin and ignores SIGTERM, as
	// servers started through npx may: the daemon's exit takes nerve's
	// whole stop grace after its socket has gone quiet.
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	n.Must("node", "add", "mcp", "slow", "--", bad, "--ignore-eof", "--ignore-term")
	for i := 0; i < 10; i++ {
		if out := n.Must("daemon", "stop"); !strings.Contains(out, "daemon stopped") {
			t.Fatalf("round %d: daemon stop said %q", i+1, out)
		}
		if out := n.Must("node", "ls"); !strings.Contains(out, "echo") {
			t.Fatalf("round %d: node ls after a stop = %q", i+1, out)
		}
	}
}

// TestBinaryStartRacesStop: a command that starts a daemon while the old
// one is still stopping waits for it instead of failing.
func TestBinaryStartRacesStop(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	n.Must("node", "add", "mcp", "slow", "--", bad, "--ignore-eof", "--ignore-term")
	for i := 0; i < 3; i++ {
		var wg sync.WaitGroup
		var stopOut, stopErr, lsOut, lsErr string
		var stopCode, lsCode int
		wg.Add(2)
		go func() { defer wg.Done(); stopOut, stopErr, stopCode = n.Run("daemon", "stop") }()
		go func() { defer wg.Done(); lsOut, lsErr, lsCode = n.Run("node", "ls") }()
		wg.Wait()
		if stopCode != 0 {
			t.Errorf("round %d: daemon stop: exit %d %s%s", i+1, stopCode, stopOut, stopErr)
		}
		if lsCode != 0 || !strings.Contains(lsOut, "echo") {
			t.Errorf("round %d: node ls racing a stop: exit %d %s%s", i+1, lsCode, lsOut, lsErr)
		}
		// Whatever the order, a daemon answers now (or starts for this).
		if out := n.Must("node", "ls"); !strings.Contains(out, "echo") {
			t.Fatalf("round %d: node ls = %q", i+1, out)
		}
	}
}
