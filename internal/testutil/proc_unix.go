//go:build unix && !linux

package testutil

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ProcessAlive reports whether pid names a process that has not exited.
// Without /proc a zombie counts as alive.
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ProcessGroupAlive reports whether any process is in process group pgid.
// Without /proc a zombie counts as alive.
func ProcessGroupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ChildrenOf returns the pids of the direct children of pid, as pgrep -P
// lists them (zombies included).
func ChildrenOf(pid int) []int {
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(pid)).Output()
	var kids []int
	for _, f := range strings.Fields(string(out)) {
		if k, err := strconv.Atoi(f); err == nil {
			kids = append(kids, k)
		}
	}
	return kids
}
