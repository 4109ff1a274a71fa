package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
