//go:build linux

package main_test

import (
	"strings"
	"testing"
)

// TestDaemonFirstSessionHasBash: a person's first session starts with a
// bash node, as the embedded one does; one they removed stays removed.
func TestDaemonFirstSessionHasBash(t *testing.T) {
	h := newHome(t)
	if out := h.must("call", "@bash", "echo first-session"); !strings.Contains(out, "first-session") {
		t.Fatalf("@bash on a fresh daemon printed %q", out)
	}
	h.must("node", "rm", "bash")
	h.must("daemon", "stop")
	if out, _, _ := h.run("node", "ls"); strings.Contains(out, "bash") {
		t.Errorf("a removed @bash came back after a restart:\n%s", out)
	}
}
