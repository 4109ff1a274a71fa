package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// shutdownGrace is how long Serve lets requests finish once ctx ends
// before it cuts their connections.
const shutdownGrace = 500 * time.Millisecond

// Serve serves the API on ln until ctx ends, then stops accepting, cancels
// the requests in flight (calls, event streams) and returns. It does not
// close the sessions: Close does.
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
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Requests in flight are calls and event streams that would keep
	// Shutdown waiting: cancel them, give them a moment to answer, cut.
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
