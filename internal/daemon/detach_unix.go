//go:build unix

package daemon

import (
	"os/exec"
	"syscall"
)

// detach puts the daemon in a session of its own.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
