//go:build !unix

package mcpserver

// defaultMaxConns: without RLIMIT_NOFILE, a budget that leaves any
// process's handles to the rest of the daemon.
func defaultMaxConns() int { return 256 }
