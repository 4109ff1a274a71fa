//go:build windows

package mcpnode

import "golang.org/x/sys/windows"

// The errors of a connection refused and of one reset by the peer: Winsock's
// own, which syscall.ECONNREFUSED (an errno Go invents on Windows) is not.
var errConnRefused, errConnReset error = windows.WSAECONNREFUSED, windows.WSAECONNRESET
