//go:build !linux

package mcpserver

import "net"

// peerUID is known on Linux only (sock_diag); elsewhere the limits count
// per remote address.
func peerUID(net.Conn) (uint32, bool) { return 0, false }
