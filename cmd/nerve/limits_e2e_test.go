//go:build linux

package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// writeState writes the default session's state file as a daemon would.
func (h *nerveHome) writeState(specs ...node.Spec) {
	h.t.Helper()
	data, err := json.Marshal(map[string]any{"version": 1, "session": "default", "nodes": specs})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.MkdirAll(h.p.Sessions, 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.p.Sessions, "default.json"), data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// waitNode waits until node id is in state want and returns its info.
func (h *nerveHome) waitNode(id string, want node.State) node.Info {
	h.t.Helper()
	var info node.Info
	testutil.WaitFor(h.t, 30*time.Second, func() bool {
		info = h.nodes()[id]
		return info.State == want
	}, id+" to be "+want.String())
	return info
}

// Issue 21, item 1: a saved mcp node whose env nests ${A:- 2,500,000 deep
// killed every daemon that restored it (a stack overflow in expansion).
// Now the node is ERROR naming the limit, and the daemon and its other
// nodes live.
func TestSavedDeepExpansionDoesNotKillDaemon(t *testing.T) {
	h := newHome(t)
	const depth = 2_500_000
	deep := strings.Repeat("${A:-", depth) + "x" + strings.Repeat("}", depth)
	h.writeState(
		node.Spec{ID: "bad", Kind: "mcp", Command: []string{"true"}, Env: map[string]string{"DEEP": deep}},
		node.Spec{ID: "ok", Kind: "identity"},
	)
	bad := h.waitNode("bad", node.Error)
	if !strings.Contains(bad.Error, "more than 32 deep") {
		t.Errorf("bad's error = %q, want it to name the nesting limit", bad.Error)
	}
	h.waitNode("ok", node.Ready)
	pid := h.daemonPID()
	// The same daemon still answers: it did not die and come back.
	if out := h.must("call", "@ok", "hi"); !strings.Contains(out, "hi") {
		t.Errorf("@ok hi = %q", out)
	}
	if got := h.daemonPID(); got != pid {
		t.Errorf("daemon pid changed %d → %d: it died", pid, got)
	}
}

// Issue 21, item 1: a node whose restore did not finish last time (the
// daemon died during it; its marker is left) is not restored again but
// held in ERROR with the reason, in `node ls` and `daemon status`, while
// the other nodes come back; `node restart` builds it.
func TestNodeWhoseRestoreDiedIsHeld(t *testing.T) {
	h := newHome(t)
	h.writeState(node.Spec{ID: "victim", Kind: "identity"}, node.Spec{ID: "other", Kind: "identity"})
	marks := filepath.Join(h.p.Sessions, "default", "restoring")
	if err := os.MkdirAll(marks, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marks, "victim"), []byte("2026-11-25T06:00:00Z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := h.waitNode("victim", node.Error)
	if !strings.Contains(victim.Error, "the daemon died while restoring this node last time") || !strings.Contains(victim.Error, "nerve node restart victim") {
		t.Errorf("victim's error = %q, want the reason and the fix", victim.Error)
	}
	h.waitNode("other", node.Ready)
	if st := h.must("daemon", "status"); !strings.Contains(st, `node "victim" is ERROR: the daemon died while restoring`) {
		t.Errorf("daemon status does not report the held node:\n%s", st)
	}
	// Held across a restart of the daemon until the person acts.
	h.must("daemon", "stop")
	h.waitNode("victim", node.Error)
	h.must("node", "restart", "victim")
	h.waitNode("victim", node.Ready)
	if _, err := os.Stat(filepath.Join(marks, "victim")); !os.IsNotExist(err) {
		t.Errorf("victim's marker is still there after its restart (%v)", err)
	}
	// Restored normally now: no markers are left once the starts are done.
	h.must("daemon", "stop")
	h.waitNode("victim", node.Ready)
	h.waitNode("other", node.Ready)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		left, _ := os.ReadDir(marks)
		return len(left) == 0
	}, "the restore markers to be cleared")
}
