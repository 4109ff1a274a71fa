package childproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nerve-dev/nerve/internal/lifeline"
)

// Options are a kind's policy for its children. The zero value (or nil)
// keeps DefaultStderrLines lines and waits DefaultGrace at each step of
// Stop.
type Options struct {
	// StderrLines is how many lines of stderr to keep.
	StderrLines int
	// StopGrace is how long Stop waits after closing stdin before it
	// sends SIGTERM to the group; TermGrace how long it then waits before
	// SIGKILL.
	StopGrace, TermGrace time.Duration
	// Setsid starts the child in a session of its own (and so its own
	// process group), without a controlling terminal: a shell with job
	// control in a background group of nerve's terminal would be stopped
	// by SIGTTOU/SIGTTIN.
	Setsid bool
	// Marker is an exact NAME=VALUE entry added to the child's
	// environment; processes that carry it after leaving the child's
	// process tree and group (setsid, double fork) are found by it and
	// stopped with the child. "" means MarkerVar with a random value.
	Marker string
	// Stdin, Stdout and Stderr, when set, are the child's ends of its
	// standard files, made by the caller; Proc's own pipe is then not
	// made (its Stdin or Stdout is nil, and no stderr is kept). Start
	// does not close them: the caller closes its copies once Start
	// returns.
	Stdin, Stdout, Stderr *os.File
	// ExtraFiles are the child's file descriptors 3, 4, … (see
	// exec.Cmd.ExtraFiles); the caller closes them as for Stdin.
	ExtraFiles []*os.File
}

// MarkerVar names the environment variable of the default Marker.
const MarkerVar = "NERVE_CHILD"

// CgroupVar chooses how children are contained (Linux; read once per
// process): "off" starts them in no cgroup, "v2" or "v1" allows only that
// kind, anything else (unset, "auto") takes cgroup v2 where this process's
// own cgroup can hold groups of nerve's, else a writable v1 freezer or pids
// hierarchy, else none.
const CgroupVar = "NERVE_CGROUP"

// DefaultGrace is each wait of Stop when Options leave it zero.
const DefaultGrace = time.Second

// Proc is one running child. Stdin and Stdout are the caller's to use;
// Stop closes Stdin, the caller closes Stdout when it is done reading.
// Methods are safe for concurrent use.
type Proc struct {
	// Stdin is the write side of the child's stdin.
	Stdin *os.File
	// Stdout is the read side of the child's stdout.
	Stdout *os.File

	pid        int
	marker     string
	opts       Options
	stderr     *Ring
	stderrDone chan struct{}      // closed when stderr reaches EOF
	exited     chan struct{}      // closed once the child is reaped
	state      *os.ProcessState   // set before exited closes
	signalled  atomic.Bool        // nerve sent the group a signal
	lifeline   *lifeline.Lifeline // nil if it could not be started
	stopOnce   sync.Once
	// cg is the child's cgroup (nil: none); links name the pipes it was
	// given, which trace its orphans where there is no cgroup.
	cg    *cgroup
	links map[string]bool
}

// Start starts argv[0], looked up on the PATH of env (LookPath), with env
// as its whole environment, in dir (nerve's own folder when ""). It returns
// once the child runs; errors about the command or folder are *Error.
//
// The child leads its own process group (or session), so Stop can end what
// it starts too, and carries a marker in its environment that its
// descendants inherit, so Stop finds those that left the group; on Linux
// the kernel kills it (Pdeathsig) if the daemon dies, and a lifeline kills
// its group, session and marked processes then.
func Start(argv, env []string, dir string, opts *Options) (*Proc, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("childproc: no command to run")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StderrLines <= 0 {
		o.StderrLines = DefaultStderrLines
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultGrace
	}
	if o.TermGrace <= 0 {
		o.TermGrace = DefaultGrace
	}
	path, err := LookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	// A Windows batch file runs through cmd.exe, with a line quoted for it.
	exe, line, err := commandLine(path, argv)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, &Error{Reason: BadDir, Name: argv[0], Path: path, Dir: dir}
		}
	}
	marker := o.Marker
	if marker == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		marker = MarkerVar + "=" + hex.EncodeToString(b[:])
	}
	env = append(env[:len(env):len(env)], marker)
	// The pipes made here: the child's ends, closed once it has its
	// copies, and ours, closed if it does not start.
	var theirs, ours []*os.File
	pipe := func(given *os.File, childReads bool) (child, mine *os.File, err error) {
		if given != nil {
			return given, nil, nil
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		if childReads {
			child, mine = r, w
		} else {
			child, mine = w, r
		}
		theirs, ours = append(theirs, child), append(ours, mine)
		return child, mine, nil
	}
	p := &Proc{
		marker:     marker,
		opts:       o,
		stderr:     NewRing(o.StderrLines),
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	var stdin, stdout, stderr, stderrR *os.File
	if stdin, p.Stdin, err = pipe(o.Stdin, true); err == nil {
		if stdout, p.Stdout, err = pipe(o.Stdout, false); err == nil {
			stderr, stderrR, err = pipe(o.Stderr, false)
		}
	}
	if err != nil {
		closeAll(theirs...)
		closeAll(ours...)
		return nil, fmt.Errorf("making pipes for %q: %w", argv[0], err)
	}
	p.links = fileLinks(append([]*os.File{stdin, stdout, stderr}, o.ExtraFiles...)...)
	mk := func() *exec.Cmd {
		return &exec.Cmd{Path: exe, Args: argv, Env: env, Dir: dir, SysProcAttr: sysProcAttr(o.Setsid, line),
			Stdin: stdin, Stdout: stdout, Stderr: stderr, ExtraFiles: o.ExtraFiles}
	}
	// Held until the child and its lifeline are registered, so the
	// daemon's reaper never takes them for orphans.
	starting.RLock()
	p.cg = newCgroup()
	cmd, err := p.cg.start(mk, func(cmd *exec.Cmd) {
		cmd.Wait()
		unregister(cmd.Process.Pid)
		p.state = cmd.ProcessState
		close(p.exited)
	})
	closeAll(theirs...) // the child holds its own copies now
	if err != nil {
		starting.RUnlock()
		closeAll(ours...)
		return nil, &Error{Reason: StartFailed, Name: argv[0], Path: path, Err: err}
	}
	p.pid = cmd.Process.Pid
	register(p.pid)
	t := lifeline.Target{Group: p.pid, Marker: marker, Cgroup: p.cg.Dir()}
	if o.Setsid {
		t.Session = p.pid
	}
	p.lifeline = lifeline.Start(t)
	register(p.lifeline.Pid())
	starting.RUnlock()
	if stderrR == nil {
		close(p.stderrDone)
		return p, nil
	}
	go func() {
		defer close(p.stderrDone)
		defer stderrR.Close()
		p.stderr.ReadLines(stderrR)
	}()
	return p, nil
}

// startOnLockedThread starts cmd from a goroutine locked to its OS thread and runs
// reap on that goroutine, unlocking only once the child is reaped. enter
// and leave, when set, run on that thread just before and after the fork
// (a v1 cgroup is joined by thread); a failed enter fails the start.
//
// Pdeathsig fires when the *thread* that forked the child exits, not the
// process. Go threads normally live as long as the process, but one is torn
// down when a goroutine that locked it exits without unlocking (any library
// may do that), and a child forked from it would be killed with the daemon
// alive. A thread of our own, held for the child's lifetime, makes the
// signal mean exactly "the daemon died". It costs one thread per child,
// which cmd.Wait blocks anyway. (A locked thread also never clones the
// runtime's new threads, so one in a child's cgroup stays alone there.)
func startOnLockedThread(cmd *exec.Cmd, enter func() error, leave func() error, reap func(*exec.Cmd)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if enter != nil {
			if err := enter(); err != nil {
				started <- err
				return // exiting locked ends this thread
			}
		}
		err := cmd.Start()
		left := leave == nil || leave() == nil
		started <- err
		if err != nil {
			return
		}
		reap(cmd)
		if left {
			// A thread that could not leave a child's cgroup ends here.
			runtime.UnlockOSThread()
		}
	}()
	return <-started
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// Pid returns the child's process id, which is also its process group id.
func (p *Proc) Pid() int { return p.pid }

// Marker returns the NAME=VALUE entry that marks the child's processes.
func (p *Proc) Marker() string { return p.marker }

// LifelinePid returns the pid of the child's lifeline (0 when none could
// start), for tests that check it is gone.
func (p *Proc) LifelinePid() int { return p.lifeline.Pid() }

// Exited is closed once the child has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitState returns how the child ended, or nil while it runs.
func (p *Proc) ExitState() *os.ProcessState {
	select {
	case <-p.exited:
		return p.state
	default:
		return nil
	}
}

// Signalled reports whether nerve has signalled the child (Kill, or a Stop
// that had to go past closing stdin), so an exit is not its own doing.
func (p *Proc) Signalled() bool { return p.signalled.Load() }

// Stderr returns the ring of the child's last stderr lines. A kind may add
// lines of its own to it (stray stdout, say) to explain a failure.
func (p *Proc) Stderr() *Ring { return p.stderr }

// StderrTail formats the last n lines of stderr for an error message, or
// "" when there are none (see Tail).
func (p *Proc) StderrTail(n int) string { return Tail(p.stderr.Lines(), n) }

// StderrDone is closed when the child's stderr reaches EOF: every process
// holding it — grandchildren too — has closed it.
func (p *Proc) StderrDone() <-chan struct{} { return p.stderrDone }

// Stop ends the child in bounded steps — close stdin, wait StopGrace,
// SIGTERM to the group, wait TermGrace, SIGKILL — then kills whatever of
// the group is left (grandchildren that outlived the leader) and every
// process carrying its marker (KillAll), and releases the lifeline. Cancelling ctx cuts the waits short and goes to SIGKILL.
// It is safe to call many times and concurrently; every call returns once
// the child is reaped.
func (p *Proc) Stop(ctx context.Context) {
	p.stopOnce.Do(func() {
		if p.Stdin != nil {
			p.Stdin.Close()
		}
		if !wait(ctx, p.exited, p.opts.StopGrace) {
			p.signalled.Store(true)
			terminateGroup(p.pid)
			if !wait(ctx, p.exited, p.opts.TermGrace) {
				killGroup(p.pid)
			}
		}
		<-p.exited
		// Sweep: nothing the child started may outlive it — neither its
		// group (the leader is reaped; members that remain keep the group
		// id from being reused) nor what left the group with setsid()
		// (found by the marker).
		p.KillAll()
		p.lifeline.Release()
		unregister(p.lifeline.Pid())
		p.cg.remove()
	})
	<-p.exited
}

// Kill ends the whole group, and the marked escapees, at once (a runaway
// child). Stop still reaps it
// and releases the lifeline.
func (p *Proc) Kill() {
	p.signalled.Store(true)
	p.KillAll()
}

// wait waits up to d for ch to close; false when d or ctx ran out first.
func wait(ctx context.Context, ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}
