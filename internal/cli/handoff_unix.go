//go:build unix

package cli

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/nerve-dev/nerve/internal/front"
)

// openHandoff takes over the call the front handed over in v
// (front.EnvHandoff), for a `nerve call` command; nil otherwise.
func openHandoff(v string, args []string) (*callHandoff, error) {
	if v == front.HandoffInterrupted {
		return &callHandoff{interrupted: true}, nil
	}
	var sock, kept, skip int
	if _, err := fmt.Sscanf(v, "%d %d %d", &sock, &kept, &skip); err != nil {
		return nil, fmt.Errorf("%s=%q: %w", front.EnvHandoff, v, err)
	}
	syscall.CloseOnExec(sock)
	syscall.CloseOnExec(kept)
	sf := os.NewFile(uintptr(sock), "front connection")
	kf := os.NewFile(uintptr(kept), "front answer")
	if len(args) == 0 || args[0] != "call" {
		sf.Close()
		kf.Close()
		return nil, nil
	}
	conn, err := net.FileConn(sf)
	sf.Close()
	if err != nil {
		kf.Close()
		return nil, fmt.Errorf("taking the call's connection from the front: %w", err)
	}
	return &callHandoff{conn: newReplayConn(conn, kf), skip: skip}, nil
}
