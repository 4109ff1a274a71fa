package mcpserver

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
)

// The endpoint listens on 127.0.0.1, where every local user can connect.
// Without the token nobody gets past the 401, but a connection costs the
// daemon a descriptor however it ends: 20,000 idle connections from another
// uid once took every descriptor of the daemon, and its Unix socket (the
// owner's `nerve node ls`, `nerve call`) could no longer accept (issue 22,
// item 4). So the endpoint holds its connections to a budget:
//
//   - at most ConnLimits.Max TCP connections in all, a fraction of the
//     process's descriptors (Go raises the soft RLIMIT_NOFILE to the hard
//     limit at start; the rest stays for the Unix socket, nodes and files);
//   - a connection is unauthenticated until one of its requests carried
//     the token; at most MaxUnauth of those in all and MaxUnauthPerHost per
//     remote — its local user on Linux (peerUID: every local user comes
//     from 127.0.0.1), else its address. A new connection over a bound
//     evicts the oldest unauthenticated one of its own remote, or of the
//     remote with the most, so a flood churns itself and the owner's
//     client, whose request follows its connect at once, still gets in;
//   - a connection that only authenticated ones fill up is refused (closed
//     at accept).
//
// netutil.LimitListener was not enough: it bounds the total only, by not
// accepting, so the owner's connections would wait behind the flood's in
// the kernel's backlog.

// ConnLimits bound the endpoint's TCP connections. Zero fields take the
// defaults.
type ConnLimits struct {
	// Max bounds all connections (default: a quarter of RLIMIT_NOFILE,
	// between 16 and 1024).
	Max int
	// MaxUnauth bounds connections that have not shown the token yet
	// (default 64).
	MaxUnauth int
	// MaxUnauthPerHost bounds them per remote: per local user on Linux,
	// else per address (default 16).
	MaxUnauthPerHost int
}

const (
	defaultMaxUnauth        = 64
	defaultMaxUnauthPerHost = 16
	maxConnsCeiling         = 1024
	maxConnsFloor           = 16
)

func (c ConnLimits) withDefaults() ConnLimits {
	if c.Max <= 0 {
		c.Max = defaultMaxConns()
	}
	if c.MaxUnauth <= 0 {
		c.MaxUnauth = defaultMaxUnauth
	}
	if c.MaxUnauthPerHost <= 0 {
		c.MaxUnauthPerHost = defaultMaxUnauthPerHost
	}
	c.MaxUnauth = min(c.MaxUnauth, c.Max)
	c.MaxUnauthPerHost = min(c.MaxUnauthPerHost, c.MaxUnauth)
	return c
}

// limitListener applies ConnLimits to the connections it accepts.
type limitListener struct {
	net.Listener
	limits ConnLimits

	refused atomic.Int64 // closed at accept: the total was full
	evicted atomic.Int64 // unauthenticated connections closed for a newer one
	log     *zap.Logger
	logged  atomic.Int64 // unix nanoseconds of the last report of a flood

	// mu guards the fields below and every limitConn's authed and released.
	mu      sync.Mutex
	total   int
	unauth  []*limitConn // oldest first
	perHost map[string]int
}

func newLimitListener(ln net.Listener, limits ConnLimits, log *zap.Logger) *limitListener {
	return &limitListener{Listener: ln, limits: limits.withDefaults(), perHost: map[string]int{}, log: log}
}

// floodReport is how often at most a flood is reported in the log: once
// per connection would fill it.
const floodReport = time.Minute

// report logs, at most once per floodReport, that connections are being
// turned away.
func (l *limitListener) report() {
	now := time.Now().UnixNano()
	last := l.logged.Load()
	if now-last < int64(floodReport) || !l.logged.CompareAndSwap(last, now) {
		return
	}
	total, unauth := l.counts()
	from, _ := l.busiest()
	l.log.Warn("the MCP endpoint is turning connections away: a local program opens more than its limits (see docs/mcp-server.md)",
		zap.Int64("refused", l.refused.Load()), zap.Int64("evicted_unauthenticated", l.evicted.Load()),
		zap.Int("open", total), zap.Int("unauthenticated", unauth), zap.String("most_from", from),
		zap.Int("max", l.limits.Max), zap.Int("max_unauthenticated", l.limits.MaxUnauth))
}

// Accept returns the next connection within the limits; one over them is
// closed (or makes room by evicting an older unauthenticated one).
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// remoteKey is who a connection comes from: its local user where the
// kernel says (every local user connects from 127.0.0.1), else its address.
func remoteKey(c net.Conn) string {
	if uid, ok := peerUID(c); ok {
		return "uid " + strconv.FormatUint(uint64(uid), 10)
	}
	host := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return host
}

func (l *limitListener) admit(c net.Conn) *limitConn {
	host := remoteKey(c)
	var evict []*limitConn
	l.mu.Lock()
	if l.total >= l.limits.Max {
		if len(l.unauth) == 0 {
			l.mu.Unlock()
			l.refused.Add(1)
			c.Close()
			l.report()
			return nil
		}
		evict = append(evict, l.releaseLocked(l.oldestOfBusiestLocked()))
	}
	if l.perHost[host] >= l.limits.MaxUnauthPerHost {
		i := slices.IndexFunc(l.unauth, func(o *limitConn) bool { return o.host == host })
		evict = append(evict, l.releaseLocked(l.unauth[i]))
	}
	if len(l.unauth) >= l.limits.MaxUnauth {
		evict = append(evict, l.releaseLocked(l.oldestOfBusiestLocked()))
	}
	lc := &limitConn{Conn: c, l: l, host: host}
	l.total++
	l.unauth = append(l.unauth, lc)
	l.perHost[host]++
	l.mu.Unlock()
	for _, o := range evict {
		l.evicted.Add(1)
		o.Conn.Close()
	}
	if len(evict) > 0 {
		l.report()
	}
	return lc
}

// oldestOfBusiestLocked is the unauthenticated connection to evict: the
// oldest of the remote with the most of them, so a flood evicts its own
// connections before anyone else's. l.unauth must not be empty.
func (l *limitListener) oldestOfBusiestLocked() *limitConn {
	syncs.AssertLocked(&l.mu)
	busiest := l.unauth[0].host
	for h, n := range l.perHost {
		if n > l.perHost[busiest] {
			busiest = h
		}
	}
	i := slices.IndexFunc(l.unauth, func(o *limitConn) bool { return o.host == busiest })
	return l.unauth[i]
}

// busiest names the remote with the most unauthenticated connections.
func (l *limitListener) busiest() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	host, most := "", 0
	for h, n := range l.perHost {
		if n > most {
			host, most = h, n
		}
	}
	return host, most
}

// releaseLocked takes c out of the counts; it returns c.
func (l *limitListener) releaseLocked(c *limitConn) *limitConn {
	syncs.AssertLocked(&l.mu)
	if c.released {
		return c
	}
	c.released = true
	l.total--
	if !c.authed {
		l.dropUnauthLocked(c)
	}
	return c
}

func (l *limitListener) dropUnauthLocked(c *limitConn) {
	syncs.AssertLocked(&l.mu)
	if i := slices.Index(l.unauth, c); i >= 0 {
		l.unauth = slices.Delete(l.unauth, i, i+1)
	}
	if l.perHost[c.host]--; l.perHost[c.host] <= 0 {
		delete(l.perHost, c.host)
	}
}

// counts returns the connections open and the unauthenticated ones.
func (l *limitListener) counts() (total, unauth int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, len(l.unauth)
}

// limitConn is a connection counted by its limitListener.
type limitConn struct {
	net.Conn
	l    *limitListener
	host string
	// authed and released are guarded by l.mu.
	authed   bool
	released bool
}

// Close releases the connection's place; it is safe twice.
func (c *limitConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// authenticated marks that a request on c carried the token: c is no longer
// one a newer connection may evict.
func (c *limitConn) authenticated() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.authed || c.released {
		return
	}
	c.authed = true
	c.l.dropUnauthLocked(c)
}

type connKey struct{}

// connContext remembers a request's connection, so the handler can mark it
// authenticated (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// markAuthenticated marks the connection of a request that carried the token.
func markAuthenticated(ctx context.Context) {
	if lc, ok := ctx.Value(connKey{}).(*limitConn); ok {
		lc.authenticated()
	}
}
