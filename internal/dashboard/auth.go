package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nerve-dev/nerve/internal/syncs"
)

// How the dashboard lets a browser in. `nerve ui` asks the daemon (over
// its Unix socket, so only the daemon's user) for a one-time token and
// opens the page with it in the address. The page's first answer trades
// the token for a cookie (HttpOnly, SameSite=Strict, this origin's /ui/
// only) and redirects to the address without it, so the token is neither
// kept in the tab nor sent anywhere as a referrer. A token is good once,
// for tokenLife; a visit (the cookie) for visitLife.
//
// Every request that changes something (a POST) must also come from the
// page itself: its Origin is this origin exactly, and it carries the
// visit's CSRF token in X-Nerve-CSRF, which only the page can read (from
// GET /ui/api/hello, an answer no other origin may read). A form of
// another site can set neither.
const (
	tokenLife = time.Minute
	visitLife = 12 * time.Hour
	maxTokens = 32 // tokens minted and not used; the oldest go first
	maxVisits = 64 // visits (browsers) kept; the oldest go first
)

// CSRFHeader carries a visit's CSRF token on every POST.
const CSRFHeader = "X-Nerve-CSRF"

// gate keeps the one-time tokens and the visits.
type gate struct {
	// mu guards the fields below.
	mu     sync.Mutex
	tokens map[string]time.Time // token → expiry
	visits map[string]*visit    // cookie → visit
}

// visit is one browser let in.
type visit struct {
	csrf    string
	expires time.Time
}

func newGate() *gate {
	return &gate{tokens: map[string]time.Time{}, visits: map[string]*visit{}}
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// mint returns a new one-time token and when it expires.
func (g *gate) mint() (string, time.Time) {
	tok, now := random(), time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pruneLocked(now)
	dropOldest(g.tokens, maxTokens-1, func(t time.Time) time.Time { return t })
	g.tokens[tok] = now.Add(tokenLife)
	return tok, now.Add(tokenLife)
}

// valid reports whether tok is a token not used and not expired.
func (g *gate) valid(tok string) bool {
	if tok == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.tokens[tok]
	return ok && time.Now().Before(exp)
}

// redeem uses tok up and returns the cookie of a new visit; ok is false
// if tok was not valid (or another request used it first).
func (g *gate) redeem(tok string) (cookie string, ok bool) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.tokens[tok]
	delete(g.tokens, tok)
	if !ok || !now.Before(exp) {
		return "", false
	}
	g.pruneLocked(now)
	dropOldest(g.visits, maxVisits-1, func(v *visit) time.Time { return v.expires })
	cookie = random()
	g.visits[cookie] = &visit{csrf: random(), expires: now.Add(visitLife)}
	return cookie, true
}

// visit returns the visit whose cookie r carries.
func (g *gate) visit(r *http.Request) (*visit, bool) {
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.visits[c.Value]
	if !ok || !time.Now().Before(v.expires) {
		return nil, false
	}
	return v, true
}

func (g *gate) pruneLocked(now time.Time) {
	syncs.AssertLocked(&g.mu)
	for t, exp := range g.tokens {
		if !now.Before(exp) {
			delete(g.tokens, t)
		}
	}
	for c, v := range g.visits {
		if !now.Before(v.expires) {
			delete(g.visits, c)
		}
	}
}

// dropOldest removes the entries of m with the earliest times until at
// most n are left.
func dropOldest[V any](m map[string]V, n int, when func(V) time.Time) {
	for len(m) > n {
		var oldest string
		var t time.Time
		for k, v := range m {
			if oldest == "" || when(v).Before(t) {
				oldest, t = k, when(v)
			}
		}
		delete(m, oldest)
	}
}

// cookieName is the visit cookie's name on r's listener. A browser sends
// a host's cookies to every port of it, so two daemons (two NERVE_HOMEs)
// on one machine would overwrite each other's under one name.
func cookieName(r *http.Request) string {
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil || port == "" {
		port = "80"
	}
	return "nerve-ui-" + port
}

// setVisitCookie gives the browser its visit's cookie: for this origin's
// dashboard only, out of reach of scripts, never sent with a request
// another site started. It lasts as long as the browser runs (and the
// visit at most visitLife).
func setVisitCookie(w http.ResponseWriter, r *http.Request, value string) {
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName(r),
		Value:    value,
		Path:     Prefix,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
}

// sameOrigin reports whether r's Origin is the dashboard's own origin:
// its scheme (http; the listener has no TLS) and the Host r came to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o != "" && o == "http://"+r.Host
}

// csrfOK reports whether r carries v's CSRF token.
func csrfOK(r *http.Request, v *visit) bool {
	got := r.Header.Get(CSRFHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.csrf)) == 1
}
