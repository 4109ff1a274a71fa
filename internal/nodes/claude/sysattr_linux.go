package claude

import "syscall"

// sysProcAttr puts Claude in its own process group (so stop ends the MCP
// servers it started too) and has the kernel kill it if the daemon dies, so
// a killed daemon leaves no Claude behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
