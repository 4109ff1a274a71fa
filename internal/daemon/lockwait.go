package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nerve-dev/nerve/internal/paths"
)

// ExitTimeout bounds how long a stopping daemon may take to exit: its
// nodes' stop (StopTimeout) and a margin for the process to end.
const ExitTimeout = StopTimeout + 2*time.Second

// WaitExited waits until the daemon with process id pid has exited: no
// daemon holds the lock of p (the kernel drops it only when the process is
// gone), or — when a new daemon has taken the lock meanwhile — pid is no
// longer running.
func WaitExited(ctx context.Context, p paths.Paths, pid int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		unlock, err := lockFile(p.Lock)
		if err == nil {
			unlock()
			return nil
		}
		if !errors.Is(err, ErrRunning) {
			return err
		}
		if !processAlive(pid) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("it is still running %v after it was asked to stop", timeout)
		case <-time.After(delay):
			delay = min(delay*2, 50*time.Millisecond)
		}
	}
}

// waitLock takes the daemon lock, waiting up to timeout for a daemon that
// holds it to exit.
func waitLock(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		unlock, err := lockFile(path)
		if err == nil || !errors.Is(err, ErrRunning) {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: it is still running %v after it was asked to stop (%s is locked); see `nerve daemon status` and the log", ErrRunning, timeout, path)
		case <-time.After(delay):
			delay = min(delay*2, 50*time.Millisecond)
		}
	}
}

// answers says whether a daemon answers on the socket.
func answers(ctx context.Context, socket string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
