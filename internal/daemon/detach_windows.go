package daemon

import (
	"os/exec"
	"syscall"
)

// detach starts the daemon without a console, in a process group of its
// own so the caller's Ctrl-C does not reach it.
func detach(cmd *exec.Cmd) {
	const detachedProcess = 0x00000008
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | detachedProcess}
}
