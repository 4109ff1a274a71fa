package childproc

import "syscall"

// sysProcAttr puts the child in its own process group (so Stop can end the
// group, grandchildren included) and has the kernel kill it if the thread
// that started it — held for the child's life, see startOnLockedThread — dies with
// the daemon. Grandchildren are the lifeline's.
// Its second argument, a batch file's command line, is Windows' only.
func sysProcAttr(setsid bool, _ string) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: !setsid, Setsid: setsid, Pdeathsig: syscall.SIGKILL}
}
