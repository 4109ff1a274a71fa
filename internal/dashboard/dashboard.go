// Package dashboard is nerve's live dashboard in the browser (`nerve ui`):
// an HTTP handler the daemon mounts at /ui/ on the MCP endpoint's
// loopback listener (mcpserver.Mount), with its page, styles and script
// embedded, a server-sent event stream of a session's nodes, calls and
// graph runs, and the actions a person takes there (start, stop,
// restart, sign in, call a tool, answer a call the session's policy
// holds for a person). It reads the session through
// *session.Session and asks the daemon for the rest through Options;
// only internal/daemon imports it.
package dashboard

import (
	"context"
	"embed"
	"io/fs"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui/"

// Refused is the 401 answer to a request without the dashboard's cookie
// or a fresh one-time token.
const Refused = "the dashboard opens only through `nerve ui` (or `nerve ui --url`), whose address carries a one-time token; a token is good once, for a minute"

//go:embed web
var web embed.FS

// Options configure New.
type Options struct {
	// Session returns the daemon's session called name. Required.
	Session func(ctx context.Context, name string) (*session.Session, error)
	// Restart restarts a node as the daemon's restart route does; nil:
	// session.Restart.
	Restart func(ctx context.Context, s *session.Session, id string) error
	// Hooks are what needs packages above the daemon.
	Hooks Hooks
	// Version is nerve's version, shown on the page.
	Version string
	// Logger receives the dashboard's logs; nil discards them.
	Logger *zap.Logger
}

// Hooks are the dashboard's needs that live above the daemon, in the
// command line that starts it (internal/cli). A nil hook leaves its
// feature out.
type Hooks struct {
	// CanSignIn reports whether a node signs in with OAuth (an mcp node
	// of a server over HTTP).
	CanSignIn func(spec node.Spec) bool
	// SignIn runs `nerve node auth`'s OAuth sign-in for spec: it calls
	// show with the address the person opens, and returns once the
	// sign-in is saved (signed false: the saved one still works, nothing
	// was asked) or failed. The dashboard restarts the node after.
	SignIn func(ctx context.Context, spec node.Spec, show func(url string)) (signed bool, err error)
	// Steps returns a graph node's steps and what each waits for, to
	// draw its runs.
	Steps func(spec node.Spec) ([]Step, error)
}

// Step is one step of a graph as the dashboard draws it.
type Step struct {
	ID string `json:"id"`
	// Call is the node.tool it calls; empty for an ask step.
	Call string `json:"call,omitempty"`
	// Needs are the steps it waits for.
	Needs []string `json:"needs,omitempty"`
}

// Dashboard is the dashboard's handler. Close stops what it started.
type Dashboard struct {
	opts   Options
	log    *zap.Logger
	mux    *http.ServeMux
	gate   *gate
	calls  *callBus
	asks   *approvals // approve.go
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// signMu guards signing: the sign-ins running, by session/node.
	signMu  sync.Mutex
	signing map[string]bool
}

// New returns the dashboard's handler.
func New(opts *Options) *Dashboard {
	o := *opts
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Restart == nil {
		o.Restart = func(ctx context.Context, s *session.Session, id string) error { return s.Restart(ctx, id) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dashboard{
		opts: o, log: o.Logger, gate: newGate(), calls: newCallBus(), asks: newApprovals(),
		ctx: ctx, cancel: cancel, signing: map[string]bool{},
	}
	d.mux = d.routes()
	return d
}

// routes is the dashboard's route table.
func (d *Dashboard) routes() *http.ServeMux {
	mux := http.NewServeMux()
	files, _ := fs.Sub(web, "web") // never fails: web is embedded
	static := http.StripPrefix(Prefix, http.FileServerFS(files))
	mux.HandleFunc("GET /ui/{$}", d.handlePage)
	mux.Handle("GET /ui/", static)

	const n = "/ui/api/sessions/{session}/nodes/{node}"
	mux.Handle("GET /ui/api/hello", apiHandler(d.handleHello))
	mux.Handle("GET /ui/api/sessions/{session}/events", apiHandler(d.handleEvents)) // events.go
	mux.Handle("GET "+n+"/tools", apiHandler(d.handleTools))
	mux.Handle("GET "+n+"/runs/{run}", apiHandler(d.handleRun))
	mux.Handle("POST "+n+"/start", d.action(d.handleStart))
	mux.Handle("POST "+n+"/stop", d.action(d.handleStop))
	mux.Handle("POST "+n+"/restart", d.action(d.handleRestart))
	mux.Handle("POST "+n+"/signin", d.action(d.handleSignIn))
	mux.Handle("POST "+n+"/call", d.action(d.handleCall))
	mux.Handle("POST /ui/api/sessions/{session}/approvals/{id}", d.action(d.handleAnswer)) // approve.go
	return mux
}

// Close ends the event streams and the sign-ins in progress and waits for
// the sign-ins. It is safe to call twice.
func (d *Dashboard) Close() {
	d.cancel()
	d.wg.Wait()
}

// Link mints a one-time token and returns the address that opens the
// dashboard of session name on the listener at base (http://HOST:PORT),
// and when the token expires.
func (d *Dashboard) Link(base, name string) (string, time.Time) {
	tok, exp := d.gate.mint()
	q := url.Values{"token": {tok}}
	if name != "" {
		q.Set("session", name)
	}
	return base + Prefix + "?" + q.Encode(), exp
}

// Authorized reports whether r may reach the dashboard: it carries the
// cookie of a visit, or it is the page's address with a token not yet
// used (mcpserver.Mount.Authorized).
func (d *Dashboard) Authorized(r *http.Request) bool {
	if _, ok := d.gate.visit(r); ok {
		return true
	}
	return r.Method == http.MethodGet && r.URL.Path == Prefix && d.gate.valid(r.URL.Query().Get("token"))
}

// securityHeaders are on every answer: scripts and styles only from the
// dashboard's own files, images also as data: URLs (a tool's image
// content), no inline code, no eval, no string reaching an HTML sink
// (Trusted Types with no policy), no framing, no referrer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
		"require-trusted-types-for 'script'; trusted-types 'none'",
	"X-Content-Type-Options":       "nosniff",
	"Referrer-Policy":              "no-referrer",
	"X-Frame-Options":              "DENY",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Cache-Control":                "no-store",
}

func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
	// Fetch metadata (sent by every current browser): a request another
	// site or another port of this machine made is refused, whatever it
	// carries; a navigation typed or opened from outside ("none") only
	// reaches the page.
	switch site := r.Header.Get("Sec-Fetch-Site"); {
	case site == "" || site == "same-origin":
	case site == "none" && r.URL.Path == Prefix:
	default:
		http.Error(w, "forbidden: the dashboard answers only its own page (Sec-Fetch-Site: "+site+")", http.StatusForbidden)
		return
	}
	d.mux.ServeHTTP(w, r)
}
