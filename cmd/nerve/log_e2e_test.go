package main_test

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestCallLog: every call lands in the call log; `nerve log` shows it and
// `nerve log --follow` shows calls as they are made.
func TestCallLog(t *testing.T) {
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	h.must("node", "add", "bash", "sh")
	h.must("call", "@echo", "first call")
	_, _, code := h.run("call", "@sh", "(exit 3)")
	if code != 3 {
		t.Fatalf("a call whose tool reported an error exited %d, want 3", code)
	}

	out := h.must("log")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("nerve log shows %d lines, want 2 (one per call):\n%s", len(lines), out)
	}
	if !strings.Contains(lines[0], "default @echo identity") || !strings.Contains(lines[0], `"first call"`) || !strings.Contains(lines[0], " ok → first call") {
		t.Errorf("first line %q lacks session, node, tool, arguments or status", lines[0])
	}
	if !strings.Contains(lines[1], "@sh bash") || !strings.Contains(lines[1], "isError") {
		t.Errorf("second line %q does not say the tool reported an error", lines[1])
	}
	if one := h.must("log", "-n", "1"); strings.Count(one, "\n") != 1 {
		t.Errorf("nerve log -n 1 shows %q", one)
	}

	follow := h.cmd("log", "--follow", "-n", "0")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follow.Process.Kill(); follow.Wait() })
	var mu sync.Mutex
	var seen []string
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			seen = append(seen, sc.Text())
			mu.Unlock()
		}
	}()
	h.must("call", "@echo", "followed")
	testutil.WaitFor(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range seen {
			if strings.Contains(l, `"followed"`) {
				return true
			}
		}
		return false
	}, "nerve log --follow to show the new call")
}
