//go:build !linux && !darwin

package daemon

import (
	"errors"
	"net"
)

// peerCredSupported is false where nerve cannot read a peer's uid
// (Windows: the socket's folder is private to the user instead).
const peerCredSupported = false

func peerUID(c *net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not supported on this system")
}
