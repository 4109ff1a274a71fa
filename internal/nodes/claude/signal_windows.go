//go:build windows

package claude

import (
	"errors"
	"syscall"
)

// errWindows explains why a claude node does not start on Windows: stopping
// Claude and the MCP servers it starts relies on Unix process groups.
var errWindows = errors.New("the claude node is not supported on windows (it needs Unix process groups to stop Claude and its MCP servers): run nerve under WSL")

func platformSupported() error { return errWindows }

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signal kills the child; startProc never starts one on Windows, so this
// only keeps the package building.
func (p *proc) signal(syscall.Signal) {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}
