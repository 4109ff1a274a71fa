//go:build unix && !linux

package childproc

import "syscall"

// sysProcAttr puts the child in its own process group so Stop can end the
// whole group. Only Linux has a parent-death signal; the lifeline covers
// the rest.
// Its second argument, a batch file's command line, is Windows' only.
func sysProcAttr(setsid bool, _ string) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: !setsid, Setsid: setsid}
}
