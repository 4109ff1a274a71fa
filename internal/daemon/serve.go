package daemon

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// shutdownGrace is how long Serve lets requests finish once ctx ends
// before it cuts their connections.
const shutdownGrace = 500 * time.Millisecond

// Serve serves the API on ln until ctx ends, then stops: it removes a
// Unix socket's name, so that a new connection fails at once and its
// client starts the next daemon; answers every request that arrives from
// then on (but its version and a stop) 503 stopping (api.CodeStopping:
// nothing of it ran, the client sends it again to the next daemon);
// cancels the requests in flight (calls, event streams); takes and
// answers the connections still queued on the socket; and returns once
// every connection it took has its answer (or after shutdownGrace). It
// does not close the sessions: Close does.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           d.handler,
		ConnContext:       connContext,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
	}
	// net/http's own complaints (an accept that failed, a bad request)
	// belong in the daemon's log.
	if l, err := zap.NewStdLogAt(d.log.Named("api"), zap.WarnLevel); err == nil {
		srv.ErrorLog = l
	}
	busy := &connTracker{conns: map[net.Conn]struct{}{}}
	srv.ConnState = busy.track
	var dl *drainListener
	if ul, ok := ln.(*net.UnixListener); ok {
		dl = &drainListener{UnixListener: ul}
		ln = dl
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// A connection queued on the socket when it closes is reset, and its
	// client cannot tell whether its request ran. With the name gone no
	// new one can queue: take those there are and answer them, then
	// close.
	if dl != nil {
		if err := dl.unlink(); err != nil {
			d.log.Warn("removing the socket", zap.Error(err))
		}
	}
	d.stopping.Store(true)
	// Requests in flight are calls and event streams that would keep
	// Shutdown waiting: cancel them and give them a moment to answer.
	cancel()
	gctx, gcancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer gcancel()
	if dl != nil {
		dl.drain()
		if err := <-errc; err != nil && !errors.Is(err, errDrained) {
			return err
		}
	}
	// Shutdown drops, unanswered, a request it finds on a connection it
	// has not read yet: first let every connection taken be answered.
	busy.wait(gctx)
	if err := srv.Shutdown(gctx); err != nil {
		srv.Close()
	}
	if dl != nil {
		return nil // Serve returned when the queue was drained
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// connTracker knows the connections between their accept or a request
// and its answer (http.StateNew, StateActive).
type connTracker struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	quiet chan struct{} // closed when conns empties, if someone waits
}

// track is the server's ConnState hook.
func (t *connTracker) track(c net.Conn, s http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s == http.StateNew || s == http.StateActive {
		t.conns[c] = struct{}{}
		return
	}
	delete(t.conns, c) // idle, hijacked, closed
	if len(t.conns) == 0 && t.quiet != nil {
		close(t.quiet)
		t.quiet = nil
	}
}

// wait returns when no connection waits for an answer, or ctx ends.
func (t *connTracker) wait(ctx context.Context) {
	t.mu.Lock()
	if len(t.conns) == 0 {
		t.mu.Unlock()
		return
	}
	if t.quiet == nil {
		t.quiet = make(chan struct{})
	}
	quiet := t.quiet
	t.mu.Unlock()
	select {
	case <-quiet:
	case <-ctx.Done():
	}
}

// drainWait is how long a draining listener waits for one more queued
// connection: once the socket's name is gone only a connect already under
// way can still arrive.
const drainWait = 50 * time.Millisecond

// errDrained ends Serve's accept loop once the queue is empty.
var errDrained = errors.New("the socket's queue is drained")

// drainListener is the daemon's Unix listener; drain makes its Accept
// return the connections already queued, then errDrained.
type drainListener struct {
	*net.UnixListener
	draining atomic.Bool
}

// unlink removes the socket's name; Close then leaves the path alone, as
// the next daemon may own it by then.
func (l *drainListener) unlink() error {
	l.SetUnlinkOnClose(false)
	err := os.Remove(l.Addr().String())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// drain wakes an Accept that waits, and bounds every wait from now on.
func (l *drainListener) drain() {
	l.draining.Store(true)
	_ = l.SetDeadline(time.Now().Add(drainWait))
}

func (l *drainListener) Accept() (net.Conn, error) {
	if l.draining.Load() {
		_ = l.SetDeadline(time.Now().Add(drainWait))
	}
	c, err := l.UnixListener.Accept()
	if err != nil && l.draining.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, errDrained
	}
	return c, err
}

// MemListener is an in-memory net.Listener: Dial hands the server one end
// of a net.Pipe. Embedded mode and tests serve the API on it, so they run
// the same HTTP code as the daemon with no socket. It is safe for
// concurrent use; Close may be called twice.
type MemListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewMemListener returns a listener with no connections yet.
func NewMemListener() *MemListener {
	return &MemListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next Dial.
func (l *MemListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and Dial.
func (l *MemListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr names the listener.
func (l *MemListener) Addr() net.Addr { return memAddr{} }

// Dial connects to the listener.
func (l *MemListener) Dial(ctx context.Context) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("embedded session is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "embedded" }

// Embedded is a daemon serving one process in memory.
type Embedded struct {
	*Daemon
	ln     *MemListener
	cancel context.CancelFunc
	done   chan error
}

// StartEmbedded makes a daemon with opts, restores it (which only creates
// the default session unless opts.Persist) and serves it in memory until
// Close. Connect a client with Dial.
func StartEmbedded(ctx context.Context, opts *Options) (*Embedded, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Embedded = true
	d, err := New(&o)
	if err != nil {
		return nil, err
	}
	if err := d.Restore(ctx); err != nil {
		d.Close(ctx)
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	e := &Embedded{Daemon: d, ln: NewMemListener(), cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- d.Serve(sctx, e.ln) }()
	return e, nil
}

// Dial opens an in-memory connection to the embedded daemon.
func (e *Embedded) Dial(ctx context.Context) (net.Conn, error) { return e.ln.Dial(ctx) }

// Close stops serving and stops every node. It is safe to call twice.
func (e *Embedded) Close(ctx context.Context) error {
	e.cancel() // Serve's Shutdown closes the listener
	err := <-e.done
	e.done <- err // a second Close finds it again
	return errors.Join(err, e.Daemon.Close(ctx))
}
