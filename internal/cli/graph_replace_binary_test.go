//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinaryGraphEditSurvivesDaemonKill kills the daemon (SIGKILL) the
// moment `nerve graph edit` first changes the session's state file, then
// at once after the edit begins, and restarts it: the graph comes back,
// with the old definition or the new one, never neither (issue 17, item
// 10). An edit done as a remove and then an add lost the graph here.
func TestBinaryGraphEditSurvivesDaemonKill(t *testing.T) {
	n := newRealNerve(t)
	defs := [2]string{
		filepath.Join(n.home, "a.yaml"),
		filepath.Join(n.home, "b.yaml"),
	}
	srcs := [2]string{
		"steps:\n  a: {call: echo.identity, args: {text: old}}\n",
		"steps:\n  b: {call: echo.identity, args: {text: new}}\n",
	}
	for i := range defs {
		writeFile(t, defs[i], srcs[i])
	}
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "g", "--from", defs[0])
	state := filepath.Join(n.home, "sessions", "default.json")
	pidOf := regexp.MustCompile(`pid (\d+)`)

	cur := 0
	for round := range 8 {
		m := pidOf.FindStringSubmatch(n.Must("daemon", "status"))
		if m == nil {
			t.Fatal("`nerve daemon status` names no pid")
		}
		pid, _ := strconv.Atoi(m[1])
		before, err := os.Stat(state)
		if err != nil {
			t.Fatal(err)
		}
		next := 1 - cur
		edit := n.Command("graph", "edit", "g", "--from", defs[next])
		if err := edit.Start(); err != nil {
			t.Fatal(err)
		}
		if round%2 == 0 {
			// The moment the edit first touches the state file.
			deadline := time.Now().Add(time.Minute)
			for {
				fi, err := os.Stat(state)
				if err == nil && !os.SameFile(fi, before) { // saved: renamed over the old file
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: the edit never changed %s", round, state)
				}
			}
		} else {
			// Somewhere in the edit's first milliseconds.
			time.Sleep(time.Duration(round) * time.Millisecond)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		edit.Wait()

		// The next command starts a new daemon, which restores the session.
		out, errs, code := n.Run("graph", "export", "g")
		switch {
		case code == 0 && out == srcs[next]:
			cur = next
		case code == 0 && out == srcs[cur]:
		default:
			t.Fatalf("round %d: after the daemon was killed during `graph edit`, `nerve graph export g` exits %d: %s%s; want the old definition or the new one", round, code, out, errs)
		}
		if got := n.Must("call", "@g", "run"); !strings.Contains(got, []string{"old", "new"}[cur]) {
			t.Errorf("round %d: @g run printed %q, want the definition export shows", round, got)
		}
	}
}
