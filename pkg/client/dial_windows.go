package client

import (
	"os"
	"os/exec"
	"syscall"
)

// detachCmd puts the process in a process group of its own, so a Ctrl-C
// at the console reaches nerve and not ssh.
func detachCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// terminate ends the process (Windows has no SIGTERM to send it).
func terminate(p *os.Process) { _ = p.Kill() }
