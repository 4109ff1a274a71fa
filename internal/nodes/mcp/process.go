package mcpnode

import (
	"context"
	"errors"
	"fmt"
	"github.com/nerve-dev/nerve/internal/lifeline"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// process is a stdio MCP server: a child in its own process group, its
// stdin and stdout the MCP stream, its stderr kept in a ring.
//
// The SDK's CommandTransport waits 5 s after closing stdin and signals only
// the direct child, so a server started through npx takes 5 s to stop and
// can leave the real server behind (see ARCHITECTURE.md). process ends the
// whole group in bounded steps instead.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File
	stdout *lastBytes
	stderr *ring

	stopGrace, termGrace time.Duration

	exited     chan struct{}           // closed once the child is reaped
	state      func() *os.ProcessState // valid once exited is closed
	stderrDone chan struct{}           // closed when stderr reaches EOF
	signalled  atomic.Bool             // nerve sent the group a signal
	lifeline   *lifeline.Lifeline      // nil if it could not be started
	closeOnce  sync.Once
}

// startProcess starts argv in dir with env (which wins over nerve's own for
// the PATH lookup too).
func startProcess(argv, env []string, dir string, stopGrace, termGrace time.Duration) (*process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no command to run: give one after -- (e.g. `nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp`)")
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("working folder %q does not exist or is not a folder: fix the node's cwd", dir)
		}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir, SysProcAttr: sysProcAttr()}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{stdinR, stdinW, stdoutR, stdoutW} {
			f.Close()
		}
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	exited := make(chan struct{})
	var state *os.ProcessState
	err = startLocked(cmd, func() {
		cmd.Wait()
		state = cmd.ProcessState
		close(exited)
	})
	// The child holds its own copies now.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		stderrR.Close()
		return nil, startError(argv[0], path, err)
	}
	p := &process{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      stdinW,
		stdout:     &lastBytes{r: stdoutR},
		stderr:     newRing(stderrLines),
		stopGrace:  stopGrace,
		termGrace:  termGrace,
		exited:     exited,
		stderrDone: make(chan struct{}),
	}
	p.state = func() *os.ProcessState { <-exited; return state }
	p.lifeline = lifeline.Start(lifeline.Target{Group: p.pid})
	go func() {
		defer close(p.stderrDone)
		defer stderrR.Close()
		p.stderr.readLines(stderrR)
	}()
	return p, nil
}

// startLocked starts cmd from a goroutine locked to its OS thread and runs
// reap on that goroutine, unlocking only once the child is reaped.
//
// Pdeathsig (sysattr_linux.go) fires when the *thread* that forked the
// child exits, not the process. Go threads normally live as long as the
// process, but one is torn down when a goroutine that locked it exits
// without unlocking (any library may do that), and a child forked from it
// would be killed with the daemon alive. A thread of our own, held for the
// child's lifetime, makes the signal mean exactly "the daemon died". It
// costs one thread per stdio server, which cmd.Wait blocks anyway.
func startLocked(cmd *exec.Cmd, reap func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			// Exiting locked ends this thread; nothing depends on it.
			return
		}
		started <- nil
		reap()
		runtime.UnlockOSThread()
	}()
	return <-started
}

// lookPath finds file like exec.LookPath, but in the PATH of the child's
// environment, which a config may set.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		st, err := os.Stat(file)
		switch {
		case err != nil:
			return "", fmt.Errorf("command %q not found: check the path (is it installed there?)", file)
		case st.IsDir():
			return "", fmt.Errorf("command %q is a folder, not a program: give the program's path", file)
		case st.Mode()&0o111 == 0:
			return "", fmt.Errorf("command %q cannot be run: permission denied (make it executable: chmod +x %s)", file, file)
		}
		return file, nil
	}
	pathEnv, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathEnv, ok = v, true
		}
	}
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	denied := ""
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if st.Mode()&0o111 == 0 {
			denied = p
			continue
		}
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		return p, nil
	}
	if denied != "" {
		return "", fmt.Errorf("command %q (%s) cannot be run: permission denied (make it executable: chmod +x %s)", file, denied, denied)
	}
	return "", fmt.Errorf("command %q not found on PATH: is it installed, and is its folder on PATH? (try `which %s`; PATH=%s)", file, file, pathEnv)
}

func startError(name, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("command %q (%s) cannot be run: permission denied (check its mode and the folder's: chmod +x %s)", name, path, path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("command %q (%s) cannot be started: %v (is its interpreter, the #! line, installed?)", name, path, err)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("command %q (%s) is not a program this system can run: %v", name, path, err)
	}
	return fmt.Errorf("starting %q: %w", name, err)
}

// transport returns an mcp.Transport over the child's stdin and stdout.
// Closing the connection stops the child (see shutdown).
func (p *process) transport(maxLine int) mcp.Transport {
	return &mcp.IOTransport{Reader: p.stdout, Writer: stdinCloser{p}, MaxLineLength: maxLine}
}

// stdinCloser is the write side of the stream; the SDK closes it last when
// the connection closes, and that is when the child must go.
type stdinCloser struct{ p *process }

func (s stdinCloser) Write(b []byte) (int, error) { return s.p.stdin.Write(b) }
func (s stdinCloser) Close() error                { s.p.shutdown(); return nil }

// shutdown stops the child as the MCP spec asks for stdio — close its stdin,
// wait, SIGTERM, wait, SIGKILL — but signals the whole process group, and
// finally kills whatever of the group is left (grandchildren that outlived
// the leader). It is safe to call many times and concurrently; every call
// returns once the child is reaped.
func (p *process) shutdown() {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		if !wait(p.exited, p.stopGrace) {
			p.signalled.Store(true)
			terminateGroup(p.pid)
			if !wait(p.exited, p.termGrace) {
				killGroup(p.pid)
				<-p.exited
			}
		}
		// Sweep the group: nothing of it may outlive the node. The leader
		// is reaped; members that remain keep the group id from being reused.
		killGroup(p.pid)
		p.lifeline.Release()
		// stderr may still hold the lines that explain an exit.
		wait(p.stderrDone, 200*time.Millisecond)
		p.stdout.Close()
	})
	<-p.exited
}

// exitedByItself reports whether the child has exited without a signal
// from nerve, and how.
func (p *process) exitedByItself() (string, bool) {
	select {
	case <-p.exited:
	default:
		return "", false
	}
	if p.signalled.Load() {
		return "", false
	}
	return describeExit(p.state()), true
}

func describeExit(st *os.ProcessState) string {
	if st == nil {
		return "exited"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed (%s, signal %d)", ws.Signal(), int(ws.Signal()))
	}
	return fmt.Sprintf("exited with code %d", st.ExitCode())
}

// waitExited waits up to d for the child to exit by itself.
func (p *process) waitExited(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	case <-ctx.Done():
	}
}

func wait(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

var _ io.WriteCloser = stdinCloser{}
