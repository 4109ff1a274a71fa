// Package testutil holds helpers shared by nerve's tests: finding the
// repository, building the project's binaries once per test process,
// waiting on conditions that have no event, inspecting processes in /proc,
// and the skip-or-fail rule for missing real peers (NERVE_REQUIRE_E2E).
//
// Only _test.go files may import it.
package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartHelper runs this test binary again as a helper process — no test
// runs; env, added to this process's environment, tells the package's
// TestMain what to act as instead (a daemon running a node, say) — and
// returns it with the first line it printed (and the error of reading
// it). The helper's stderr is the test's; it is killed when the test ends.
func StartHelper(t testing.TB, env ...string) (cmd *exec.Cmd, line string, err error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err = bufio.NewReader(out).ReadString('\n')
	return cmd, line, err
}

// Hang blocks the calling goroutine for good, as a stuck process would. A
// bare select {} is not enough: built without cgo, the runtime notices that
// every goroutine is asleep and kills the process with "all goroutines are
// asleep - deadlock!" — a different fault from the one the test stages.
func Hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// RequireE2EEnv is the environment variable under which a test whose real
// peer is missing fails instead of skipping. CI sets it to 1.
const RequireE2EEnv = "NERVE_REQUIRE_E2E"

// E2ERequired reports whether missing peers must fail tests.
func E2ERequired() bool {
	return os.Getenv(RequireE2EEnv) == "1"
}

// RequireE2E does nothing when err is nil. Otherwise it stops the test: it
// fails under NERVE_REQUIRE_E2E=1 and skips with a message naming what is
// missing elsewhere. what names the peer, e.g. "npm" or "tmux".
func RequireE2E(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if E2ERequired() {
		t.Fatalf("%s is needed by this test and %s=1 forbids skipping: %v", what, RequireE2EEnv, err)
		return // for a testing.TB whose Fatalf returns
	}
	t.Skipf("skipping: %s is not available (%v); set %s=1 to make this a failure", what, err, RequireE2EEnv)
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// RepoRoot returns the absolute path of the directory holding go.mod, found
// by walking up from the working directory (go test runs each package in
// its own directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() { rootDir, rootErr = findRepoRoot() })
	if rootErr != nil {
		t.Fatalf("finding the repository root: %v", rootErr)
	}
	return rootDir
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; run tests from inside the repository")
		}
		dir = parent
	}
}

type buildResult struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*buildResult{}

	binDirOnce sync.Once
	binDir     string
	binDirErr  error
)

// BuildBinary builds the main package pkg (a path relative to the
// repository root, e.g. "./cmd/nerve" or "./fixtures/mcpserver") once per
// test process and returns the absolute path of the executable. Concurrent
// callers share one build; a failed build fails every caller with go
// build's output.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	root := RepoRoot(t)
	buildsMu.Lock()
	b, ok := builds[pkg]
	if !ok {
		b = &buildResult{}
		builds[pkg] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() { b.path, b.err = build(root, pkg) })
	if b.err != nil {
		t.Fatalf("building %s: %v", pkg, b.err)
	}
	return b.path
}

// PrebuiltEnv names a folder of binaries built beforehand, for a test
// binary that runs where no Go toolchain does: .ci/wine-exec, which runs
// the Windows tests under Wine, builds the fixtures they start there, each
// named as BuildBinary names it ("./fixtures/mcpserver" is
// fixtures_mcpserver, with .exe on Windows).
const PrebuiltEnv = "NERVE_PREBUILT"

func build(root, pkg string) (string, error) {
	name := strings.NewReplacer("/", "_", ".", "_").Replace(strings.Trim(pkg, "./"))
	if name == "" {
		name = "root"
	}
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		p := filepath.Join(dir, name)
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s is set, but has no %s built: %w", PrebuiltEnv, pkg, err)
		}
		return p, nil
	}
	binDirOnce.Do(func() { binDir, binDirErr = makeBinDir() })
	if binDirErr != nil {
		return "", binDirErr
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %w", err)
	}
	out := filepath.Join(binDir, name)
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, msg)
	}
	return out, nil
}

// binDirPrefix names the per-process directories that hold built binaries.
// The pid in the name lets a later process remove the directories of test
// processes that have exited, since a test binary has no hook that runs when
// it ends.
const binDirPrefix = "nerve-testbin-"

func makeBinDir() (string, error) {
	tmp := os.TempDir()
	if old, err := filepath.Glob(filepath.Join(tmp, binDirPrefix+"*")); err == nil {
		for _, dir := range old {
			pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), binDirPrefix), "-")
			if pid, err := strconv.Atoi(pidStr); err == nil && !ProcessAlive(pid) {
				os.RemoveAll(dir)
			}
		}
	}
	return os.MkdirTemp(tmp, fmt.Sprintf("%s%d-", binDirPrefix, os.Getpid()))
}

// WaitFor polls cond until it returns true, failing the test after timeout.
// It is for conditions that have no event to wait on, such as a process
// exiting or a file appearing; where a channel or callback exists, wait on
// that instead. what completes "timed out waiting for ...".
func WaitFor(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
			return // for a testing.TB whose Fatalf returns
		}
		time.Sleep(delay)
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// SocketDir returns a new folder, removed when the test ends, whose path
// is short enough to put a Unix socket in (sun_path holds 104 bytes on
// macOS, 108 on Linux): t.TempDir's, named after the test, may not be.
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TempDir is t.TempDir for the tests that also run under Wine: Wine 8
// answers the call with which Go 1.26's os.RemoveAll deletes on Windows
// (NtSetInformationFile, FileDispositionInformationEx) with an error Go
// does not fall back from ("Invalid function"), so t.TempDir's clean-up
// fails there. This one removes what it holds one path at a time with
// os.Remove (DeleteFile, RemoveDirectory), deepest first.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nerve-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var paths []string
		filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
			paths = append(paths, p)
			return nil
		})
		for i := len(paths) - 1; i >= 0; i-- {
			if err := os.Remove(paths[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("removing the test's folder: %v", err)
				return
			}
		}
	})
	return dir
}
