//go:build unix

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// realNerve is the real nerve binary with a home of its own, for tests that
// drive it as a person or a script does.
type realNerve struct {
	t    *testing.T
	bin  string
	home string
	// Dir is the folder commands run in (default: home).
	Dir string
	// Env, when set, replaces the test's environment (NERVE_HOME and
	// NERVE_SESSION are added either way).
	Env []string
	// Stdin is given to each command.
	Stdin string
}

// newRealNerve builds nerve and gives it a fresh home; the daemon is
// stopped and the home removed when the test ends.
func newRealNerve(t *testing.T) *realNerve {
	t.Helper()
	bin := testutil.BuildBinary(t, "./cmd/nerve")
	// A short folder: a Unix socket path must stay under ~100 bytes.
	home, err := os.MkdirTemp("", "nr")
	if err != nil {
		t.Fatal(err)
	}
	n := &realNerve{t: t, bin: bin, home: home, Dir: home}
	t.Cleanup(func() {
		n.Dir, n.Env, n.Stdin = home, nil, ""
		n.Run("daemon", "stop")
		os.RemoveAll(home)
	})
	return n
}

// Command is nerve args as Run would start it.
func (n *realNerve) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(n.bin, args...)
	base := n.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = append(append([]string(nil), base...), "NERVE_HOME="+n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=")
	cmd.Dir = n.Dir
	if n.Stdin != "" {
		cmd.Stdin = strings.NewReader(n.Stdin)
	}
	return cmd
}

// Run runs nerve args and returns what it printed and its exit code.
func (n *realNerve) Run(args ...string) (stdout, stderr string, code int) {
	n.t.Helper()
	cmd := n.Command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		n.t.Fatalf("running nerve %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// Must runs nerve args and fails the test unless it exits 0.
func (n *realNerve) Must(args ...string) string {
	n.t.Helper()
	out, errs, code := n.Run(args...)
	if code != 0 {
		n.t.Fatalf("nerve %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func daemonPID(t *testing.T, n *realNerve) int {
	t.Helper()
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(n.Must("daemon", "status"))
	if m == nil {
		t.Fatal("daemon status shows no pid")
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// Commander opens the Commander of this nerve in a terminal (tmux) and
// waits for its prompt.
func (n *realNerve) Commander() *tmux.Term {
	n.t.Helper()
	term := tmux.Start(n.t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)
	return term
}
