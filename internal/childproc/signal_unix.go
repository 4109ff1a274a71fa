//go:build unix

package childproc

import "syscall"

// terminateGroup asks every process of group pgid to stop (SIGTERM).
func terminateGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGTERM) }

// killGroup ends every process of group pgid (SIGKILL).
func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }
