package bash

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

const daemonHelperEnv = "NERVE_BASH_DAEMON_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(daemonHelperEnv) == "1" {
		runDaemonHelper()
		return
	}
	os.Exit(m.Run())
}

// runDaemonHelper plays a daemon: it starts a bash node whose command left
// background jobs behind — one in the shell's session, one that left it
// with setsid — prints their pids and waits to be killed.
func runDaemonHelper() {
	n, err := New(node.Spec{ID: "victim", Kind: Kind}, node.Env{})
	if err == nil {
		err = n.Start(context.Background())
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// setsid forks when it leads a process group (every job does under
	// set -m), so the escapee reports its own pid through a file.
	f, _ := os.CreateTemp("", "escapee")
	f.Close()
	defer os.Remove(f.Name())
	cmd := "sleep 300 & echo pid=$!; setsid sh -c 'echo $$ > " + f.Name() + "; exec sleep 301' & until [ -s " + f.Name() + " ]; do sleep 0.01; done; echo pid=$(cat " + f.Name() + ")"
	r, err := callErr(context.Background(), n.(*Node), cmd, 0)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var pids []string
	for _, w := range strings.Fields(r.text) {
		if p, ok := strings.CutPrefix(w, "pid="); ok {
			pids = append(pids, p)
		}
	}
	fmt.Println("pids", strings.Join(pids, " "))
	testutil.Hang()
}

// TestDaemonKilledLeavesNoOrphan SIGKILLs a process running a bash node
// (as the daemon would be) and checks that the shell's background jobs die
// with it, also one that left the shell's session.
func TestDaemonKilledLeavesNoOrphan(t *testing.T) {
	requireBash(t)
	cmd, line, err := testutil.StartHelper(t, daemonHelperEnv+"=1")
	f := strings.Fields(line)
	if err != nil || len(f) < 3 || f[0] != "pids" {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	var pids []int
	for _, s := range f[1:] {
		if pid, err := strconv.Atoi(s); err == nil {
			pids = append(pids, pid)
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for _, pid := range pids {
		if !testutil.ProcessAlive(pid) {
			t.Fatalf("background job %d is not running before the kill", pid)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for _, pid := range pids {
		testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessAlive(pid) },
			fmt.Sprintf("background job %d to die with the daemon", pid))
	}
}

// TestShellOutlivesTheThreadThatStartedIt: Pdeathsig fires when the
// *thread* that forked the child exits. A bash node started from a
// goroutine whose thread then ends (a locked goroutine that exits) must
// keep its shell; bash runs on childproc, which holds a thread of its own
// for the child's life (issue 22, item 8). Before, the shell was killed.
func TestShellOutlivesTheThreadThatStartedIt(t *testing.T) {
	requireBash(t)
	var n *Node
	var err error
	testutil.OnExitingThread(t, func() {
		var nn node.Node
		if nn, err = New(node.Spec{ID: "sh", Kind: Kind}, node.Env{}); err == nil {
			err = nn.Start(context.Background())
		}
		n, _ = nn.(*Node)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	// The parent-death signal is sent as the thread exits, before its
	// /proc entry goes: the shell is dead by now if it was tied to it.
	r, err := callErr(context.Background(), n, "echo alive", 10)
	if err != nil || r.text != "alive\n" {
		t.Fatalf("call after the starting thread exited: %q, %v (node %s: %s)", r.text, err, n.State(), n.Info().Error)
	}
}
