//go:build unix

package claude

import "syscall"

// platformSupported reports whether this system can run a claude node.
func platformSupported() error { return nil }

// signal sends sig to the child's whole process group: Claude and the MCP
// servers it started.
func (p *proc) signal(sig syscall.Signal) {
	syscall.Kill(-p.pid, sig)
}
