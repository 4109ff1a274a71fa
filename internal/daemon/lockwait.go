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

// WaitExited waits until no daemon holds the lock of p: the daemon that
// was asked to stop has exited, so a new one can start at once. The lock
// is dropped by the kernel when the process is gone, so this is the exit
// itself, not a guess from the socket.
func WaitExited(ctx context.Context, p paths.Paths, timeout time.Duration) error {
	unlock, err := waitLock(ctx, p.Lock, timeout)
	if err != nil {
		return err
	}
	unlock()
	return nil
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
