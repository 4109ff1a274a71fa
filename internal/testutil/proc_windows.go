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
