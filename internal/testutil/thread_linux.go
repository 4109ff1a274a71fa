//go:build linux

package testutil

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// OnExitingThread runs f on a goroutine locked to an OS thread other than
// the main one and never unlocked, so that the thread exits with the
// goroutine, and returns once the thread is gone (/proc/self/task/TID). A
// child process started in f whose parent-death signal was tied to the
// starting thread (Pdeathsig is per thread) would have died by then.
func OnExitingThread(t testing.TB, f func()) {
	t.Helper()
	type landing struct {
		tid     int
		release chan struct{} // set when the goroutine landed on the main thread
	}
	ch := make(chan landing)
	var tid int
	for tid == 0 {
		go func() {
			runtime.LockOSThread()
			if syscall.Gettid() == os.Getpid() {
				// The main thread never exits: park on it until the test
				// ends, so that the next try gets another thread.
				release := make(chan struct{})
				ch <- landing{release: release}
				<-release
				runtime.UnlockOSThread()
				return
			}
			f()
			ch <- landing{tid: syscall.Gettid()}
		}()
		l := <-ch
		if l.release != nil {
			t.Cleanup(func() { close(l.release) })
			continue
		}
		tid = l.tid
	}
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	WaitFor(t, 10*time.Second, func() bool {
		_, err := os.Stat(task)
		return os.IsNotExist(err)
	}, fmt.Sprintf("the thread %d (pid %d) to exit", tid, os.Getpid()))
}
