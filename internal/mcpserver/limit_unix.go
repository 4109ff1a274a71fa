//go:build unix

package mcpserver

import "syscall"

// defaultMaxConns is a quarter of the process's descriptors: the other
// three quarters stay for the Unix socket, the nodes' pipes and files.
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 256
	}
	return int(min(max(rl.Cur/4, maxConnsFloor), maxConnsCeiling))
}
