//go:build unix && !linux

package testutil

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether pid names a process that has not exited.
// Without /proc a zombie counts as alive.
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
