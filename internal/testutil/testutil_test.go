package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// recorder is a testing.TB that records how a helper ended the test instead
// of ending it.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestRequireE2E(t *testing.T) {
	tests := []struct {
		name       string
		env        string
		err        error
		skip, fail bool
	}{
		{"peer present", "1", nil, false, false},
		{"missing, not required", "", errors.New("no npm"), true, false},
		{"missing, required", "1", errors.New("no npm"), false, true},
		{"missing, other value", "0", errors.New("no npm"), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(RequireE2EEnv, tc.env)
			r := &recorder{TB: t}
			RequireE2E(r, "npm", tc.err)
			if (r.skipped != "") != tc.skip || (r.failed != "") != tc.fail {
				t.Fatalf("skipped=%q failed=%q, want skip=%v fail=%v", r.skipped, r.failed, tc.skip, tc.fail)
			}
		})
	}
}

func TestRepoRootHasGoMod(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot() = %q without go.mod: %v", root, err)
	}
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, 10*time.Second, func() bool { n++; return n == 3 }, "the third poll")
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
	r := &recorder{TB: t}
	WaitFor(r, time.Millisecond, func() bool { return false }, "never")
	if r.failed == "" {
		t.Fatal("WaitFor on a condition that stays false did not fail")
	}
}

// TestProcessGroupHelpers starts a shell with a grandchild-like sleep in its
// own process group, sees both through /proc, kills the group and sees it
// gone.
func TestProcessGroupHelpers(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 300 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL); <-waited })

	var kids []int
	WaitFor(t, 10*time.Second, func() bool { kids = ChildrenOf(pgid); return len(kids) == 1 }, "the shell to start sleep")
	if !ProcessAlive(kids[0]) || !ProcessGroupAlive(pgid) {
		t.Fatalf("child %d alive=%v, group %d alive=%v; want both alive", kids[0], ProcessAlive(kids[0]), pgid, ProcessGroupAlive(pgid))
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	waited <- nil // for the cleanup
	// The orphaned sleep is reaped by init (or a subreaper), not by us.
	WaitFor(t, 10*time.Second, func() bool { return !ProcessGroupAlive(pgid) }, "the process group to die")
	if ProcessAlive(kids[0]) {
		t.Errorf("sleep %d still alive after its group was killed", kids[0])
	}
	if got := ChildrenOf(os.Getpid()); slices.Contains(got, pgid) {
		t.Errorf("ChildrenOf(self) = %v still lists the reaped shell %d", got, pgid)
	}
}

func TestBuildBinaryOncePerPackage(t *testing.T) {
	first := BuildBinary(t, "./fixtures/badmcp")
	if second := BuildBinary(t, "./fixtures/badmcp"); second != first {
		t.Errorf("second build at %q, want the cached %q", second, first)
	}
	out, err := exec.Command(first, "--mode", "crash-start").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("built badmcp --mode crash-start: %v (%s), want exit 7", err, out)
	}
}
