//go:build windows

package testutil

import "golang.org/x/sys/windows"

// ProcessAlive reports whether pid names a process that has not exited: a
// process that has exited can still be opened while a handle to it is
// held (its parent's), so it is asked whether it is signalled.
func ProcessAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// ProcessGroupAlive reports whether the process pgid is alive: Windows has
// no process groups of the Unix kind; a node's processes are in a job
// object there, so the group a test waits on is its leader.
func ProcessGroupAlive(pgid int) bool { return ProcessAlive(pgid) }
