//go:build linux

package testutil

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

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
