//go:build !windows

package mcpnode

import "syscall"

// The errors of a connection refused and of one reset by the peer.
var errConnRefused, errConnReset error = syscall.ECONNREFUSED, syscall.ECONNRESET
