//go:build linux

package childproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// helperEnv makes the test binary act as a daemon holding one child.
const helperEnv = "NERVE_CHILDPROC_TEST_DAEMON"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runDaemonHelper()
		return
	}
	os.Exit(m.Run())
}

// withGrandchild is a child that starts a grandchild in its group, prints
// the grandchild's pid and waits.
var withGrandchild = []string{"/bin/sh", "-c", "sleep 300 & echo $!; wait"}

// escapingChild leaves an escapee with an empty environment in a session
// of its own, whose parent exits at once, and prints its pid.
var escapingChild = []string{"/bin/sh", "-c", `(env -i setsid sh -c 'echo $$; exec sleep 300' &); exec sleep 300`}

// runDaemonHelper starts withGrandchild (escapingChild when the helper
// variable says "escape"), prints "pids CHILD GRANDCHILD LIFELINE" and
// waits to be killed.
func runDaemonHelper() {
	argv := withGrandchild
	if os.Getenv(helperEnv) == "escape" {
		argv = escapingChild
	}
	p, err := Start(argv, os.Environ(), "", nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	line, _ := bufio.NewReader(p.Stdout).ReadString('\n')
	fmt.Println("pids", p.Pid(), strings.TrimSpace(line), p.lifeline.Pid())
	testutil.Hang()
}

func start(t *testing.T, argv []string, opts *Options) *Proc {
	t.Helper()
	p, err := Start(argv, os.Environ(), "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		p.Stop(context.Background())
		p.Stdout.Close()
	})
	return p
}

// readPid reads one line of the child's stdout as a pid.
func readPid(t *testing.T, p *Proc) int {
	t.Helper()
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		t.Fatalf("child said %q (%v), want a pid", line, err)
	}
	return pid
}

// stopWithin runs Stop and fails the test if it has not returned in d.
func stopWithin(t *testing.T, ctx context.Context, p *Proc, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		p.Stop(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("Stop did not return within %v", d)
	}
}

func signalOf(st *os.ProcessState) syscall.Signal {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

func TestStopEndsTheChildInStages(t *testing.T) {
	// Each stage's grace is short only where the test waits it out: a
	// child that should end at a stage gets 5 s to do so (cat took over
	// 50 ms to exit on stdin EOF beside a CPU hog, and was signalled).
	const short, long = 50 * time.Millisecond, 5 * time.Second
	tests := []struct {
		name           string
		argv           []string
		opts           *Options
		wantSignalled  bool
		wantSignal     syscall.Signal // 0: exited by itself
		wantGrandchild bool
	}{
		{"exits on stdin EOF", []string{"/bin/cat"}, &Options{StopGrace: long, TermGrace: short}, false, 0, false},
		{"needs SIGTERM, grandchild too", withGrandchild, &Options{StopGrace: short, TermGrace: long}, true, syscall.SIGTERM, true},
		// Ignored signals are inherited: the grandchild ignores SIGTERM too.
		{"ignores SIGTERM, gets SIGKILL", []string{"/bin/sh", "-c", `trap "" TERM; sleep 300 & echo $!; wait`}, &Options{StopGrace: short, TermGrace: short}, true, syscall.SIGKILL, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.argv, tt.opts)
			kid := 0
			if tt.wantGrandchild {
				kid = readPid(t, p)
			}
			lifeline := p.lifeline.Pid()
			if lifeline == 0 || !testutil.ProcessAlive(lifeline) {
				t.Fatalf("no lifeline running for the child (pid %d)", lifeline)
			}
			stopWithin(t, context.Background(), p, 10*time.Second)
			st := p.ExitState()
			if st == nil {
				t.Fatal("ExitState is nil after Stop")
			}
			if got := signalOf(st); got != tt.wantSignal || p.Signalled() != tt.wantSignalled {
				t.Errorf("child ended by signal %v (signalled %v), want %v (%v); state %v", got, p.Signalled(), tt.wantSignal, tt.wantSignalled, st)
			}
			// Stop sweeps the group and releases the lifeline before it returns.
			testutil.WaitFor(t, 5*time.Second, func() bool {
				return !testutil.ProcessGroupAlive(p.Pid()) && (kid == 0 || !testutil.ProcessAlive(kid)) && !testutil.ProcessAlive(lifeline)
			}, fmt.Sprintf("group %d, grandchild %d and lifeline %d to be gone", p.Pid(), kid, lifeline))
			stopWithin(t, context.Background(), p, time.Second) // twice is fine
		})
	}
}

func TestStopWithCancelledContextKillsAtOnce(t *testing.T) {
	p := start(t, []string{"/bin/sh", "-c", `trap "" TERM; echo $$; while :; do sleep 1; done`}, &Options{StopGrace: time.Hour, TermGrace: time.Hour})
	readPid(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopWithin(t, ctx, p, 10*time.Second)
	if got := signalOf(p.ExitState()); got != syscall.SIGKILL {
		t.Errorf("child ended by %v, want SIGKILL", got)
	}
}

func TestKillEndsTheGroup(t *testing.T) {
	p := start(t, withGrandchild, nil)
	kid := readPid(t, p)
	p.Kill()
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("child still running 10s after Kill")
	}
	if got := signalOf(p.ExitState()); got != syscall.SIGKILL || !p.Signalled() {
		t.Errorf("child ended by %v (signalled %v), want SIGKILL", got, p.Signalled())
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessAlive(kid) }, "the grandchild to die with its group")
}

func TestStderrRingKeepsTheLastLines(t *testing.T) {
	long := strings.Repeat("x", MaxStderrLine+100)
	tests := []struct {
		name   string
		script string
		keep   int
		want   []string
	}{
		{"fewer than kept", `echo one >&2; echo two >&2`, 5, []string{"one", "two"}},
		{"more than kept", `i=0; while [ $i -lt 200 ]; do echo line $i >&2; i=$((i+1)); done`, 3, []string{"line 197", "line 198", "line 199"}},
		{"over-long line cut", `printf '%s\nafter\n' "` + long + `" >&2`, 5, []string{long[:MaxStderrLine] + " …", "after"}},
		{"carriage returns dropped", `printf 'dos\r\n' >&2`, 5, []string{"dos"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, []string{"/bin/sh", "-c", tt.script}, &Options{StderrLines: tt.keep})
			select {
			case <-p.StderrDone():
			case <-time.After(10 * time.Second):
				t.Fatal("stderr still open after 10s")
			}
			got := p.Stderr().Lines()
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("kept %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStderrTail(t *testing.T) {
	tests := []struct {
		lines []string
		n     int
		want  string
	}{
		{nil, 10, ""},
		{[]string{" ", ""}, 10, ""},
		{[]string{"a", "", "b", "c"}, 2, "\nlast lines of its stderr:\n  | b\n  | c"},
	}
	for _, tt := range tests {
		if got := Tail(tt.lines, tt.n); got != tt.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.lines, tt.n, got, tt.want)
		}
	}
	p := start(t, []string{"/bin/sh", "-c", "echo oops >&2"}, nil)
	<-p.StderrDone()
	if got, want := p.StderrTail(10), "\nlast lines of its stderr:\n  | oops"; got != want {
		t.Errorf("StderrTail = %q, want %q", got, want)
	}
}

// TestDaemonKilledLeavesNoChild SIGKILLs a process holding a child (as
// the daemon would be): Pdeathsig ends the child, the lifeline its
// grandchild, and the lifeline then exits.
func TestDaemonKilledLeavesNoChild(t *testing.T) {
	testDaemonKilled(t, "1")
}

// TestDaemonKilledLeavesNoEscapee: where the child has a cgroup, the
// lifeline of a SIGKILLed daemon kills the whole group, an escapee that
// cleared its environment and left the session and tree included.
func TestDaemonKilledLeavesNoEscapee(t *testing.T) {
	for _, cg := range []string{"v2", "v1"} {
		t.Run(cg, func(t *testing.T) {
			if c, why := setupCgroups(cg); c == nil {
				testutil.RequireE2E(t, "a writable cgroup hierarchy", errors.New(why))
			} else {
				os.Remove(c.dir)
			}
			testDaemonKilled(t, "escape", CgroupVar+"="+cg)
		})
	}
}

func testDaemonKilled(t *testing.T, mode string, env ...string) {
	cmd, line, err := testutil.StartHelper(t, append(env, helperEnv+"="+mode)...)
	var child, kid, lifeline int
	if _, serr := fmt.Sscanf(line, "pids %d %d %d", &child, &kid, &lifeline); err != nil || serr != nil || child == 0 || kid == 0 || lifeline == 0 {
		t.Fatalf("helper said %q (%v, %v)", line, err, serr)
	}
	t.Cleanup(func() { syscall.Kill(-child, syscall.SIGKILL); syscall.Kill(kid, syscall.SIGKILL) })
	for _, pid := range []int{child, kid, lifeline} {
		if !testutil.ProcessAlive(pid) {
			t.Fatalf("process %d is not running before the kill", pid)
		}
	}
	if mode == "escape" {
		sid, _ := unix.Getsid(kid)
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", kid))
		if sid != kid || strings.Contains(string(env), MarkerVar) {
			t.Fatalf("the escapee %d is in session %d with environment %q; want a session of its own, no marker", kid, sid, env)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return !testutil.ProcessAlive(child) && !testutil.ProcessAlive(kid) && !testutil.ProcessAlive(lifeline) && !testutil.ProcessGroupAlive(child)
	}, fmt.Sprintf("child %d, grandchild %d and lifeline %d to be gone", child, kid, lifeline))
}

// TestChildOutlivesTheThreadThatStartedIt: Pdeathsig fires when the thread
// that forked the child exits. A child started from a goroutine whose
// thread then ends (a locked goroutine that exits) must keep running.
func TestChildOutlivesTheThreadThatStartedIt(t *testing.T) {
	var p *Proc
	var err error
	testutil.OnExitingThread(t, func() { p, err = Start([]string{"/bin/cat"}, os.Environ(), "", nil) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()); p.Stdout.Close() })
	// cat echoes a line only while it runs.
	if _, err := p.Stdin.WriteString("alive\n"); err != nil {
		t.Fatalf("writing to the child after its starting thread exited: %v", err)
	}
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil || line != "alive\n" {
		t.Fatalf("child answered %q, %v after its starting thread exited (alive: %v)", line, err, testutil.ProcessAlive(p.Pid()))
	}
}

// TestStopEndsEscapees: a grandchild that left the child's process group
// and session with setsid() is found by the marker and stopped with the
// child (issue 22, item 7); before, only the group was killed and it
// lived on.
func TestStopEndsEscapees(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *Options
	}{
		{"process group", &Options{StopGrace: 50 * time.Millisecond, TermGrace: 50 * time.Millisecond}},
		{"own session", &Options{StopGrace: 50 * time.Millisecond, TermGrace: 50 * time.Millisecond, Setsid: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, []string{"/bin/sh", "-c", `setsid /bin/sh -c 'echo $$; exec sleep 300' & wait`}, tt.opts)
			kid := readPid(t, p)
			t.Cleanup(func() { syscall.Kill(kid, syscall.SIGKILL) })
			testutil.WaitFor(t, 5*time.Second, func() bool {
				sid, _ := unix.Getsid(kid)
				return sid == kid
			}, fmt.Sprintf("the grandchild %d to lead its own session", kid))
			if !strings.HasPrefix(p.Marker(), MarkerVar+"=") {
				t.Errorf("Marker() = %q, want %s=…", p.Marker(), MarkerVar)
			}
			stopWithin(t, context.Background(), p, 10*time.Second)
			testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessAlive(kid) },
				fmt.Sprintf("the escapee %d to be gone after Stop", kid))
		})
	}
}
