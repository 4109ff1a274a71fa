//go:build unix && !linux

package childproc

import "syscall"

// sysProcAttr puts the child in its own process group so Stop can end the
// whole group. Only Linux has a parent-death signal; the lifeline covers
// the rest.
func sysProcAttr(setsid bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: !setsid, Setsid: setsid}
}
