package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/paths"
)

// ErrRunning is returned by Run when another daemon holds the lock.
var ErrRunning = errors.New("a nerve daemon is already running")

// StopTimeout bounds how long stopping every node may take on shutdown;
// with the server's grace it keeps the whole exit under 5 s.
const StopTimeout = 4 * time.Second

// Run is `nerve daemon start --foreground`: it takes the daemon lock,
// replaces a stale socket (never a live one), listens, restores every
// saved session and serves until ctx ends or a client asks it to stop; then
// it stops every node in parallel and returns. opts.Paths must be set;
// Persist and CallLog are set from it.
func Run(ctx context.Context, opts Options, ready func()) error {
	p := opts.Paths
	if err := p.Ensure(); err != nil {
		return err
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
		opts.Logger = log
	}
	if os.Getenv(LoginPathVar) != "" {
		os.Unsetenv(LoginPathVar)
		path := loginPATH(ctx, os.Getenv("PATH"))
		os.Setenv("PATH", path)
		log.Info("using the login shell's PATH", zap.String("PATH", path))
	}
	unlock, err := lockFile(p.Lock)
	if errors.Is(err, ErrRunning) && !answers(ctx, p.Socket) {
		// A daemon that was asked to stop holds the lock until it has
		// exited (it stops its nodes first): wait for it rather than fail
		// the command that is starting a new one.
		unlock, err = waitLock(ctx, p.Lock, ExitTimeout)
	}
	if err != nil {
		return err
	}
	defer unlock()
	// Orphans of every node are the daemon's (subreaper), and those still
	// running when it stops die with it, after the nodes (childproc).
	defer childproc.AdoptOrphans()()
	ln, err := listen(ctx, p)
	if err != nil {
		return err
	}
	defer os.Remove(p.Socket)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	opts.Persist = true
	if opts.CallLog == "" {
		opts.CallLog = p.CallLog
	}
	opts.Socket = p.Socket
	opts.OnShutdown = stop
	d, err := New(&opts)
	if err != nil {
		ln.Close()
		return err
	}
	defer d.startMCP()() // mcp_endpoint.go: before Restore, which starts claude nodes
	if err := d.Restore(ctx); err != nil {
		log.Error("restoring sessions", zap.Error(err))
	}
	log.Info("daemon ready", zap.String("socket", p.Socket), zap.Int("pid", os.Getpid()), zap.String("version", opts.Version), zap.String("containment", childproc.Containment()))
	if ready != nil {
		ready()
	}
	serveErr := d.Serve(ctx, ln)
	log.Info("daemon stopping")
	cctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- d.Close(cctx) }()
	var closeErr error
	select {
	case closeErr = <-closed:
	case <-time.After(StopTimeout + 200*time.Millisecond):
		// A node that ignores its deadline must not keep the daemon up.
		closeErr = errors.New("some nodes did not stop in time")
	}
	if closeErr != nil {
		log.Warn("stopping nodes", zap.Error(closeErr))
	}
	log.Info("daemon stopped")
	return serveErr
}

// listen makes the socket: a stale file (nobody answers) is removed, a live
// one is never touched. The caller holds the lock, so no other daemon is
// between our check and our listen.
func listen(ctx context.Context, p paths.Paths) (net.Listener, error) {
	if _, err := os.Lstat(p.Socket); err == nil {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		var d net.Dialer
		c, err := d.DialContext(dctx, "unix", p.Socket)
		cancel()
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%w: %s answers (stop it with `nerve daemon stop`)", ErrRunning, p.Socket)
		}
		if err := os.Remove(p.Socket); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", p.Socket, err)
		}
	}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", p.Socket, err)
	}
	if err := os.Chmod(p.Socket, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("making %s private: %w", p.Socket, err)
	}
	return ln, nil
}
