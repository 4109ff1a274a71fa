package mcpserver

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// The MCP sessions of the HTTP endpoint (issue 22, item 4). A client that
// goes away without DELETE leaves its session behind: the SDK keeps it up
// to SessionTimeout (2 h), and in node mode the node's sampling and
// elicitation requests were sent to it, where nobody answers, so the
// caller who needed them waited for their timeout. So the endpoint knows,
// per session, its open event streams (GET) and requests in flight:
//
//   - a session with neither is not asked anything (Server.reachable): a
//     request goes to another client, or is declined at once;
//   - one that has had neither for SessionIdle is closed;
//   - beyond MaxSessions, the sessions with neither are closed, least
//     recently used first. Sessions with an open stream hold a connection
//     each, which the connection limits bound.

// Defaults of HTTPOptions.SessionIdle and MaxSessions.
const (
	DefaultSessionIdle = 10 * time.Minute
	DefaultMaxSessions = 256
)

// sessionHeader names an MCP session in streamable HTTP requests.
const sessionHeader = "Mcp-Session-Id"

// sessionUses tracks the use of one server's MCP sessions.
type sessionUses struct {
	// mu guards m.
	mu sync.Mutex
	m  map[string]*sessionUse
}

type sessionUse struct {
	streams  int             // open GET event streams
	requests int             // other requests in flight
	last     time.Time       // when a stream or request last began or ended
	gone     []chan struct{} // closed when streams and requests reach 0
}

// serve passes r to next, counting it for its session; a new session (the
// answer to initialize) is counted from its first answer on.
func (u *sessionUses) serve(next http.Handler, w http.ResponseWriter, r *http.Request) (created string) {
	id := r.Header.Get(sessionHeader)
	stream := r.Method == http.MethodGet
	if id != "" {
		u.change(id, stream, 1)
		defer u.change(id, stream, -1)
	}
	next.ServeHTTP(w, r)
	if id == "" {
		if created = w.Header().Get(sessionHeader); created != "" {
			u.change(created, false, 0)
		}
	}
	return created
}

func (u *sessionUses) change(id string, stream bool, d int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	su := u.m[id]
	if su == nil {
		su = &sessionUse{}
		u.m[id] = su
	}
	if stream {
		su.streams += d
	} else {
		su.requests += d
	}
	su.last = time.Now()
	if su.streams == 0 && su.requests == 0 {
		for _, c := range su.gone {
			close(c)
		}
		su.gone = nil
	}
}

// reachable says whether the client of session id can be sent a request
// now: it has an event stream open or a request in flight.
func (u *sessionUses) reachable(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	su := u.m[id]
	return su != nil && (su.streams > 0 || su.requests > 0)
}

// unreachable returns a channel closed once the client of session id has
// no stream open and no request in flight (at once if it has none now),
// and a function that stops watching.
func (u *sessionUses) unreachable(id string) (<-chan struct{}, func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := make(chan struct{})
	su := u.m[id]
	if su == nil || su.streams == 0 && su.requests == 0 {
		close(c)
		return c, func() {}
	}
	su.gone = append(su.gone, c)
	return c, func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if i := slices.Index(su.gone, c); i >= 0 {
			su.gone = slices.Delete(su.gone, i, i+1)
		}
	}
}

// idleSession is a session with no stream and no request.
type idleSession struct {
	ss   *mcp.ServerSession
	last time.Time
}

// scan returns the sessions of live with no stream and no request, and
// forgets the sessions that are no longer live.
func (u *sessionUses) scan(live []*mcp.ServerSession, now time.Time) []idleSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	ids := make(map[string]bool, len(live))
	var idle []idleSession
	for _, ss := range live {
		id := ss.ID()
		ids[id] = true
		su := u.m[id]
		if su == nil { // made before the answer that names it was sent
			su = &sessionUse{last: now}
			u.m[id] = su
		}
		if su.streams == 0 && su.requests == 0 {
			idle = append(idle, idleSession{ss, su.last})
		}
	}
	for id, su := range u.m {
		if !ids[id] && su.streams == 0 && su.requests == 0 {
			delete(u.m, id)
		}
	}
	return idle
}

// reapSessions closes the sessions idle for SessionIdle and, beyond
// MaxSessions, the least recently used of those with no stream.
func (h *HTTPHandler) reapSessions() {
	h.reapMu.Lock()
	defer h.reapMu.Unlock()
	h.mu.Lock()
	servers := slices.Collect(maps.Values(h.servers))
	h.mu.Unlock()
	now := time.Now()
	total := 0
	var idle []idleSession
	for _, hs := range servers {
		live := slices.Collect(hs.s.MCP().Sessions())
		live = slices.DeleteFunc(live, func(ss *mcp.ServerSession) bool { return ss.ID() == "" })
		total += len(live)
		idle = append(idle, hs.uses.scan(live, now)...)
	}
	slices.SortFunc(idle, func(a, b idleSession) int { return a.last.Compare(b.last) })
	n := 0
	for _, is := range idle {
		if now.Sub(is.last) >= h.opts.SessionIdle || total-n > h.opts.MaxSessions {
			n++
			h.log.Info("closing an abandoned MCP session of the endpoint", zap.String("session", is.ss.ID()),
				zap.Duration("idle", now.Sub(is.last)), zap.Int("sessions", total))
			_ = is.ss.Close()
		}
	}
}

// reapLoop reaps sessions every quarter of SessionIdle (at most every
// 30 s) until the handler closes.
func (h *HTTPHandler) reapLoop() {
	t := time.NewTicker(cmp.Or(min(h.opts.SessionIdle/4, 30*time.Second), time.Second))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			h.reapSessions()
		case <-h.ctx.Done():
			return
		}
	}
}
