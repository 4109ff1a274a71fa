// Package front is the nerve command (cmd/nerve): a small program that
// makes a one-shot `nerve call` itself when it can — one request to a
// running daemon, an answer of plain text — and hands every other command
// to nerve-core, the whole program (cmd/nerve-core, internal/cli), by exec.
//
// The front links neither the daemon, the node kinds nor the MCP SDK: a
// process that links them spends longer starting (page faults and package
// inits) than a call takes (docs/performance.md). Whatever the front does
// not finish, the core finishes from where the front stopped: the bytes of
// the daemon's answer read so far and the connection go with the exec
// (EnvHandoff), so a call is never sent twice, and the core prints exactly
// what it would have printed had it made the call.
package front

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

const (
	// EnvCore, if set, is the path of nerve-core to run (packagers, tests).
	EnvCore = "NERVE_CORE"
	// EnvExe is set by the front for the core: the path of the front, the
	// program people run as nerve. The core names it where it names
	// itself (MCP client configs) and runs it to start the daemon.
	EnvExe = "NERVE_EXE"
	// EnvHandoff is set by the front for the core when it hands over a
	// `nerve call` it began: "SOCK BUF SKIP" (the connection's descriptor,
	// a descriptor of a file holding every byte read from it so far, and
	// how many stream lines the front already showed), or "interrupted"
	// (a signal ended the call; the connection is closed).
	EnvHandoff = "NERVE_CALL_HANDOFF"
	// HandoffInterrupted is EnvHandoff's value for a call a signal ended.
	HandoffInterrupted = "interrupted"
)

// module is nerve's module path: a front built from a checkout builds the
// core from the same checkout.
const module = "github.com/nerve-dev/nerve"

// Exit codes the front itself returns (internal/cli has the same).
const (
	exitOK        = 0
	exitFailed    = 1
	exitToolError = 3
)

// Run runs the nerve command with args (os.Args) and returns its exit
// code; when the core takes over, it does not return (on Windows it
// returns the core's exit code).
func Run(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nerve: finding this program: %v\n", err)
		return exitFailed
	}
	if len(args) > 1 && args[1] == "call" {
		if code, done := fastCall(self, args); done {
			return code
		}
	}
	return runCore(self, args, "")
}

// runCore hands the command to nerve-core, with handoff (if not "") in
// EnvHandoff.
func runCore(self string, args []string, handoff string) int {
	core, err := findCore(self)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nerve: %v\n", err)
		return exitFailed
	}
	env := withVar(os.Environ(), EnvExe, self)
	env = withVar(env, EnvHandoff, handoff)
	return execCore(core, args, env)
}

// withVar returns env with the variable name set to value (removed for
// ""): the first of two entries is the one a Go program reads.
func withVar(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	if value != "" {
		out = append(out, name+"="+value)
	}
	return out
}

// coreName is the file name of nerve-core.
func coreName() string {
	if runtime.GOOS == "windows" {
		return "nerve-core.exe"
	}
	return "nerve-core"
}

// findCore returns the path of nerve-core: EnvCore; beside this program
// (also beside the file a symlink to it points at); or, for a front built
// from a checkout (`go run ./cmd/nerve`), built from that checkout into
// the user's cache.
func findCore(self string) (string, error) {
	if p := os.Getenv(EnvCore); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s names nerve-core, but: %w", EnvCore, err)
		}
		return p, nil
	}
	dirs := []string{filepath.Dir(self)}
	if real, err := filepath.EvalSymlinks(self); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		p := filepath.Join(d, coreName())
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if root, ok := checkout(); ok {
		core, err := buildCore(root)
		if !errors.Is(err, errModuleCache) {
			return core, err
		}
	}
	version := "latest"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	return "", fmt.Errorf("nerve-core, the rest of nerve, is not beside %s: install both programs with `go install %s/cmd/...@%s` (or set %s to its path)", self, module, version, EnvCore)
}

// checkout returns the root of the source checkout this front was built
// from, when it was built from one (`go run` or `go build` in a clone;
// not -trimpath) and the checkout is still there: the folder of its
// go.mod, which names nerve's module. buildCore refuses a root in the
// module cache (a `go install module@version`).
func checkout() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // internal/front/front.go
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module "+module+"\n") {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "nerve-core")); err != nil {
		return "", false
	}
	return root, true
}

// errModuleCache: the front was built from the module cache, not a
// checkout; nerve-core is installed the way the front was.
var errModuleCache = errors.New("built from the module cache")

// buildCore builds nerve-core from the checkout at root into the user's
// cache and returns its path. The go command rebuilds only what changed
// (an up-to-date core costs it ~0.3 s), so a front run with `go run`
// always runs the core of the checkout as it is now.
func buildCore(root string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("nerve-core is not beside this nerve, and building it from %s needs the go command: %w", root, err)
	}
	if modcache, err := exec.Command(goCmd, "env", "GOMODCACHE").Output(); err == nil {
		if dir := strings.TrimSpace(string(modcache)); dir != "" && strings.HasPrefix(root, dir+string(filepath.Separator)) {
			return "", errModuleCache
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("nerve-core is not beside this nerve, and there is no cache folder to build it into: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte(root))
	dir := filepath.Join(cache, "nerve", fmt.Sprintf("core-%016x", h.Sum64()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("building nerve-core: %w", err)
	}
	out := filepath.Join(dir, coreName())
	unlock, err := lockFile(out + ".lock")
	if err != nil {
		return "", fmt.Errorf("building nerve-core: %w", err)
	}
	defer unlock()
	cmd := exec.Command(goCmd, "build", "-o", out, "./cmd/nerve-core")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("building nerve-core from %s failed:\n%s", root, strings.TrimSpace(string(msg)))
		}
		return "", fmt.Errorf("building nerve-core from %s: %w", root, err)
	}
	return out, nil
}
