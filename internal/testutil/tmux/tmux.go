// Package tmux drives a program in a real terminal for end-to-end tests:
// it starts the program in a detached tmux session, types keys into it and
// reads the screen, as a person would. Tests only.
package tmux

import (
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

var seq atomic.Int64

// Term is one program running in its own tmux server (a private socket,
// so tests never touch a person's tmux).
type Term struct {
	t      testing.TB
	socket string
	name   string
}

// Start runs argv in a new 160×50 terminal with env added to the
// environment. The terminal is killed when the test ends.
func Start(t testing.TB, env []string, argv ...string) *Term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		testutil.RequireE2E(t, "tmux (apt-get install tmux)", err)
	}
	term := &Term{t: t, socket: fmt.Sprintf("nerve-test-%d-%d", time.Now().UnixNano(), seq.Add(1)), name: "main"}
	// The command line runs under sh -c inside tmux: quote every word.
	var cmd strings.Builder
	for _, kv := range env {
		cmd.WriteString("export " + shellQuote(kv) + "; ")
	}
	cmd.WriteString("exec")
	for _, a := range argv {
		cmd.WriteString(" " + shellQuote(a))
	}
	out, err := exec.Command("tmux", "-L", term.socket, "-f", "/dev/null", "new-session", "-d", "-s", term.name,
		"-x", "160", "-y", "50", cmd.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("starting tmux: %v: %s", err, out)
	}
	// Keep the pane after the program exits so its last words can be read.
	_ = exec.Command("tmux", "-L", term.socket, "set-option", "-t", term.name, "remain-on-exit", "on").Run()
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", term.socket, "kill-server").Run() })
	return term
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Type sends text literally (no key names), without Enter.
func (m *Term) Type(text string) {
	m.t.Helper()
	m.tmux("send-keys", "-t", m.name, "-l", text)
}

// Keys sends tmux key names: "Enter", "Tab", "C-c", "C-d", "C-r", "Up".
func (m *Term) Keys(keys ...string) {
	m.t.Helper()
	m.tmux(append([]string{"send-keys", "-t", m.name}, keys...)...)
}

// Line types text and presses Enter.
func (m *Term) Line(text string) {
	m.t.Helper()
	m.Type(text)
	m.Keys("Enter")
}

// Screen returns the visible screen and its scroll-back, trailing blank
// lines removed.
func (m *Term) Screen() string {
	m.t.Helper()
	out, err := exec.Command("tmux", "-L", m.socket, "capture-pane", "-p", "-J", "-S", "-2000", "-t", m.name).Output()
	if err != nil {
		m.t.Fatalf("reading the screen: %v", err)
	}
	return strings.TrimRight(string(out), "\n ")
}

// WaitFor waits until the screen contains want and returns the screen; it
// fails the test, showing the screen, after timeout.
func (m *Term) WaitFor(want string, timeout time.Duration) string {
	m.t.Helper()
	return m.WaitForCount(want, 1, timeout)
}

// WaitForCount waits until want appears at least n times on the screen.
func (m *Term) WaitForCount(want string, n int, timeout time.Duration) string {
	m.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := m.Screen()
		if strings.Count(s, want) >= n {
			return s
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("after %v the screen does not show %q (%d times); it shows:\n%s", timeout, want, n, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitForAfter waits until want appears after the last occurrence of mark
// (typically the line just typed, so that neither the echo of the input
// nor earlier output can satisfy the wait) and returns the screen from
// mark on.
func (m *Term) WaitForAfter(mark, want string, timeout time.Duration) string {
	m.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := m.Screen()
		if i := strings.LastIndex(s, mark); i >= 0 && strings.Contains(s[i+len(mark):], want) {
			return s[i:]
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("after %v the screen does not show %q after %q; it shows:\n%s", timeout, want, mark, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LastLine returns the last non-blank line of the screen (where the prompt
// and what is being typed are).
func (m *Term) LastLine() string {
	s := m.Screen()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Dead reports whether the program has exited.
func (m *Term) Dead() bool {
	out, err := exec.Command("tmux", "-L", m.socket, "display-message", "-p", "-t", m.name, "#{pane_dead}").Output()
	return err != nil || strings.TrimSpace(string(out)) == "1"
}

func (m *Term) tmux(args ...string) {
	m.t.Helper()
	all := append([]string{"-L", m.socket}, args...)
	if out, err := exec.Command("tmux", all...).CombinedOutput(); err != nil {
		m.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
}
