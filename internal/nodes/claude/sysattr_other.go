//go:build unix && !linux

package claude

import "syscall"

// sysProcAttr puts Claude in its own process group so stop ends the MCP
// servers it started too.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
