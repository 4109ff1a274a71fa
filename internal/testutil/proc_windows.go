//go:build windows

package testutil

import "os"

// ProcessAlive reports whether pid names a process that has not exited.
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

// ProcessGroupAlive reports whether the process pgid is alive: Windows has
// no process groups of the Unix kind, and nerve ends a node's process
// alone there, so the group a test waits on is its leader.
func ProcessGroupAlive(pgid int) bool { return ProcessAlive(pgid) }
