package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/nerve-dev/nerve/pkg/api"
)

// peerKey is the context key of a connection's *peer.
type peerKey struct{}

// peer is who is at the other end of a connection, found once when it is
// accepted.
type peer struct {
	uid int
	err error // the credentials could not be read
}

// connContext attaches the peer's credentials to a connection's context.
// In-memory connections (embedded mode) have no peer: they come from this
// process.
func connContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	uid, err := peerUID(uc)
	return context.WithValue(ctx, peerKey{}, &peer{uid: uid, err: err})
}

// guard sets the version headers on every response and refuses requests
// from a browser (an Origin header: a web page must never drive the
// daemon) and from another user, and — once the daemon is stopping —
// every request but whileStopping's.
func (d *Daemon) guard(next http.Handler) http.Handler {
	self := os.Getuid()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set(api.HeaderAPIVersion, api.Version)
		h.Set(api.HeaderVersion, d.opts.Version)
		if o := r.Header.Get("Origin"); o != "" {
			writeError(w, http.StatusForbidden, api.Error{Code: api.CodeForbidden,
				Message: fmt.Sprintf("requests with an Origin header (%q) are refused: nerve's API is for local programs, not web pages", o)})
			return
		}
		if p, ok := r.Context().Value(peerKey{}).(*peer); ok {
			switch {
			case p.err != nil && peerCredSupported:
				writeError(w, http.StatusForbidden, api.Error{Code: api.CodeForbidden,
					Message: fmt.Sprintf("cannot tell who is connecting (%v): refused", p.err)})
				return
			case p.err == nil && p.uid != self:
				writeError(w, http.StatusForbidden, api.Error{Code: api.CodeForbidden,
					Message: fmt.Sprintf("uid %d may not use the nerve daemon of uid %d: start your own nerve", p.uid, self)})
				return
			}
		}
		if d.stopping.Load() && !whileStopping(r) {
			h.Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, api.Error{Code: api.CodeStopping,
				Message: "the nerve daemon is stopping and did not run this request: send it again (any nerve command starts a new daemon)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// whileStopping says whether a stopping daemon still answers r: its
// version (a `nerve daemon status`, or a stop waiting for it to exit) and
// a second request to stop.
func whileStopping(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/v1/version" ||
		r.Method == http.MethodPost && r.URL.Path == "/v1/shutdown"
}
