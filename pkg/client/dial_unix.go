//go:build unix

package client

import (
	"os"
	"os/exec"
	"syscall"
)

// detachCmd puts the process in a session of its own: no signal from the
// terminal's keys reaches it, and it cannot ask anything at the terminal
// (ssh then fails at once instead of waiting for a password nobody sees).
func detachCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// terminate asks the process to end.
func terminate(p *os.Process) { _ = p.Signal(syscall.SIGTERM) }
