package mcpnode

import "syscall"

// sysProcAttr puts the child in its own process group (so stop can end the
// group, grandchildren included) and has the kernel kill it if the thread
// that started it — the daemon — dies, so a killed daemon leaves no server
// behind. Grandchildren see EOF on the stdin they share with the child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
