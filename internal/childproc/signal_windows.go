//go:build windows

package childproc

import (
	"os"
	"syscall"
)

// sysProcAttr: Windows has no process groups to signal as Unix does; the
// child is ended through its handle.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// terminateGroup has no gentle form on Windows: Stop goes straight to
// killGroup after its grace period.
func terminateGroup(pid int) {}

// killGroup ends the child (its descendants are not tracked on Windows).
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
