//go:build unix

package cli

import (
	"fmt"
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

// TestBinaryStartRacesStop: commands that start a daemon while the old
// one is still stopping wait for it instead of failing: a read (`node
// ls`) and a call, which is sent again only because the stopping daemon
// ran nothing of it.
func TestBinaryStartRacesStop(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	n.Must("node", "add", "mcp", "slow", "--", bad, "--ignore-eof", "--ignore-term")
	for i := 0; i < 3; i++ {
		var wg sync.WaitGroup
		var stopOut, stopErr, lsOut, lsErr, callOut, callErr string
		var stopCode, lsCode, callCode int
		text := fmt.Sprintf("round %d", i+1)
		wg.Add(3)
		go func() { defer wg.Done(); stopOut, stopErr, stopCode = n.Run("daemon", "stop") }()
		go func() { defer wg.Done(); lsOut, lsErr, lsCode = n.Run("node", "ls") }()
		go func() { defer wg.Done(); callOut, callErr, callCode = n.Run("call", "@echo", "identity", "text="+text) }()
		wg.Wait()
		if stopCode != 0 {
			t.Errorf("round %d: daemon stop: exit %d %s%s", i+1, stopCode, stopOut, stopErr)
		}
		if lsCode != 0 || !strings.Contains(lsOut, "echo") {
			t.Errorf("round %d: node ls racing a stop: exit %d %s%s", i+1, lsCode, lsOut, lsErr)
		}
		if callCode != 0 || strings.TrimSpace(callOut) != text {
			t.Errorf("round %d: call racing a stop: exit %d %q %s", i+1, callCode, callOut, callErr)
		}
		// Whatever the order, a daemon answers now (or starts for this).
		if out := n.Must("node", "ls"); !strings.Contains(out, "echo") {
			t.Fatalf("round %d: node ls = %q", i+1, out)
		}
	}
}
