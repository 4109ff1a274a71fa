//go:build unix && !linux

package mcpnode

import "syscall"

// sysProcAttr puts the child in its own process group so stop can end the
// whole group. Only Linux has a parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
