package mcpserver

import (
	"encoding/binary"
	"net"
	"syscall"
)

// peerUID returns the uid that owns the other end of c, a TCP connection
// over loopback, by asking the kernel's sock_diag for the peer's socket
// (its address pair reversed): the endpoint's limits then count per local
// user, not per address (every local user comes from 127.0.0.1).
func peerUID(c net.Conn) (uint32, bool) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || !remote.IP.IsLoopback() {
		return 0, false
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, sockDiag)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Usec: 100_000}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)

	// struct nlmsghdr + struct inet_diag_req_v2, for the peer's socket:
	// its source is our remote end, its destination our local one.
	const reqLen = syscall.NLMSG_HDRLEN + 56
	req := make([]byte, reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], reqLen)
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	r := req[syscall.NLMSG_HDRLEN:]
	family := byte(syscall.AF_INET)
	src, dst := remote.IP.To4(), local.IP.To4()
	if src == nil || dst == nil {
		family, src, dst = syscall.AF_INET6, remote.IP.To16(), local.IP.To16()
	}
	r[0], r[1] = family, syscall.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]                     // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], uint16(remote.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(local.Port))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil || n < syscall.NLMSG_HDRLEN {
		return 0, false
	}
	if ne.Uint16(buf[4:]) != sockDiagByFamily {
		return 0, false // NLMSG_ERROR: no such socket (another namespace)
	}
	// struct inet_diag_msg: family, state, timer, retrans (4), id (48),
	// expires, rqueue, wqueue (12), uid.
	msg := buf[syscall.NLMSG_HDRLEN:n]
	if len(msg) < 68 {
		return 0, false
	}
	return ne.Uint32(msg[64:]), true
}

const (
	sockDiag         = 4  // NETLINK_SOCK_DIAG
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
)
