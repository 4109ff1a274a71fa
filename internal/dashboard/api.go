package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// maxBody caps an action's request body (a tool's arguments).
const maxBody = 4 << 20

// signInWait bounds a sign-in started from the page, as `nerve node auth`;
// signInAsk bounds how long its request waits for the address to open.
const (
	signInWait = 10 * time.Minute
	signInAsk  = 30 * time.Second
)

// apiHandler is a route's handler that returns its error; ServeHTTP
// writes it as {"error": …} with the status apiStatus gives it.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

func (h apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		writeJSON(w, apiStatus(err), map[string]string{"error": err.Error()})
	}
}

// statusError is an error with its status.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func withStatus(status int, format string, args ...any) error {
	return &statusError{status, fmt.Errorf(format, args...)}
}

// apiStatus is the one place that maps an error to its status.
func apiStatus(err error) int {
	var se *statusError
	switch {
	case errors.As(err, &se):
		return se.status
	case errors.Is(err, node.ErrNotFound), errors.Is(err, node.ErrUnknownTool):
		return http.StatusNotFound
	case errors.Is(err, node.ErrBadArgs):
		return http.StatusBadRequest
	case errors.Is(err, node.ErrNotReady):
		return http.StatusConflict
	case errors.Is(err, session.ErrClosed):
		return http.StatusServiceUnavailable
	}
	// A node's failure (a start, a call that could not be made), not the
	// dashboard's.
	return http.StatusBadGateway
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// handlePage serves the page. With ?token= it trades the token for the
// visit's cookie and redirects to the address without it.
func (d *Dashboard) handlePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if tok := q.Get("token"); tok != "" {
		cookie, ok := d.gate.redeem(tok)
		if ok {
			setVisitCookie(w, r, cookie)
		} else if _, had := d.gate.visit(r); !had {
			w.Header().Set("Connection", "close")
			http.Error(w, "unauthorized: this token was used already or is too old; "+Refused, http.StatusUnauthorized)
			return
		}
		q.Del("token")
		target := Prefix
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	if _, ok := d.gate.visit(r); !ok {
		http.Error(w, "unauthorized: "+Refused, http.StatusUnauthorized)
		return
	}
	page, err := web.ReadFile("web/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// hello is what the page asks first.
type hello struct {
	// CSRF is the visit's token, for CSRFHeader.
	CSRF    string `json:"csrf"`
	Version string `json:"version"`
}

func (d *Dashboard) handleHello(w http.ResponseWriter, r *http.Request) error {
	v, ok := d.gate.visit(r)
	if !ok {
		return withStatus(http.StatusUnauthorized, "unauthorized: %s", Refused)
	}
	writeJSON(w, http.StatusOK, hello{CSRF: v.csrf, Version: d.opts.Version})
	return nil
}

// action adapts the handler of a request that changes something: it needs
// the visit's cookie, the page's own Origin and the visit's CSRF token,
// and a JSON body.
func (d *Dashboard) action(h apiHandler) http.Handler {
	return apiHandler(func(w http.ResponseWriter, r *http.Request) error {
		v, ok := d.gate.visit(r)
		if !ok {
			return withStatus(http.StatusUnauthorized, "unauthorized: %s", Refused)
		}
		if !sameOrigin(r) {
			return withStatus(http.StatusForbidden, "forbidden: Origin %q: only the dashboard's own page may change anything", r.Header.Get("Origin"))
		}
		if !csrfOK(r, v) {
			return withStatus(http.StatusForbidden, "forbidden: no valid %s header: only the dashboard's own page may change anything; reload it", CSRFHeader)
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			return withStatus(http.StatusUnsupportedMediaType, "send the request as application/json")
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		return h(w, r)
	})
}

// session returns the request's session.
func (d *Dashboard) session(r *http.Request) (*session.Session, error) {
	s, err := d.opts.Session(r.Context(), r.PathValue("session"))
	if err != nil {
		return nil, withStatus(http.StatusNotFound, "%w", err)
	}
	return s, nil
}

func (d *Dashboard) handleTools(w http.ResponseWriter, r *http.Request) error {
	s, err := d.session(r)
	if err != nil {
		return err
	}
	tools, err := s.Tools(r.Context(), r.PathValue("node"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tools)
	return nil
}

// runRecorder is a node that keeps records of its runs (a graph): the
// interface the daemon's GET …/runs/{run} asserts.
type runRecorder interface {
	RunRecord(id string) (json.RawMessage, error)
}

// runView is a graph run as the page draws it.
type runView struct {
	Node   string          `json:"node"`
	Record json.RawMessage `json:"record"`
	// Steps are the graph's steps and what each waits for; nil when the
	// dashboard cannot tell (no Steps hook).
	Steps []Step `json:"steps,omitempty"`
}

func (d *Dashboard) handleRun(w http.ResponseWriter, r *http.Request) error {
	s, err := d.session(r)
	if err != nil {
		return err
	}
	id := r.PathValue("node")
	rec, err := d.runRecord(s, id, r.PathValue("run"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runView{Node: id, Record: rec, Steps: d.steps(s, id)})
	return nil
}

func (d *Dashboard) runRecord(s *session.Session, id, run string) (json.RawMessage, error) {
	n, err := s.Node(id)
	if err != nil {
		return nil, err
	}
	rr, ok := n.(runRecorder)
	if !ok {
		return nil, withStatus(http.StatusBadRequest, "node %q is a %s node: only graphs keep runs", id, n.Kind())
	}
	rec, err := rr.RunRecord(run)
	if err != nil {
		return nil, withStatus(http.StatusNotFound, "%w", err)
	}
	return rec, nil
}

// steps returns graph id's steps, or nil.
func (d *Dashboard) steps(s *session.Session, id string) []Step {
	if d.opts.Hooks.Steps == nil {
		return nil
	}
	spec, err := s.Spec(id)
	if err != nil {
		return nil
	}
	steps, err := d.opts.Hooks.Steps(spec)
	if err != nil {
		d.log.Debug("reading a graph's steps", zap.String("node", id), zap.Error(err))
		return nil
	}
	return steps
}

// nodeOp runs op on the request's node and answers with its view.
func (d *Dashboard) nodeOp(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, s *session.Session, id string) error) error {
	s, err := d.session(r)
	if err != nil {
		return err
	}
	id := r.PathValue("node")
	if err := op(r.Context(), s, id); err != nil {
		return err
	}
	info, err := s.Info(id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d.view(s, info))
	return nil
}

func (d *Dashboard) handleStart(w http.ResponseWriter, r *http.Request) error {
	return d.nodeOp(w, r, func(ctx context.Context, s *session.Session, id string) error { return s.Start(ctx, id) })
}

func (d *Dashboard) handleStop(w http.ResponseWriter, r *http.Request) error {
	return d.nodeOp(w, r, func(ctx context.Context, s *session.Session, id string) error { return s.Stop(ctx, id) })
}

func (d *Dashboard) handleRestart(w http.ResponseWriter, r *http.Request) error {
	return d.nodeOp(w, r, d.opts.Restart)
}

// callBody is a tool call from the page.
type callBody struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// dashboardCaller is who the call log says made the page's calls.
var dashboardCaller = node.Caller{Kind: node.CallerAPI, Name: "dashboard"}

func (d *Dashboard) handleCall(w http.ResponseWriter, r *http.Request) error {
	var body callBody
	data, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(data, &body)
	}
	if err != nil || body.Tool == "" {
		return withStatus(http.StatusBadRequest, "send {\"tool\": NAME, \"arguments\": {…}}: %v", err)
	}
	s, err := d.session(r)
	if err != nil {
		return err
	}
	// The call ends with the page's request: a tab closed cancels it.
	ctx := node.WithCaller(r.Context(), dashboardCaller)
	res, err := s.Call(ctx, r.PathValue("node"), &node.CallRequest{Tool: body.Tool, Arguments: body.Arguments})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": res})
	return nil
}

// handleSignIn starts the OAuth sign-in of an mcp node and answers with
// the address the person opens, once the flow has it; the sign-in goes
// on in the background and its end comes on the event stream ("signin").
func (d *Dashboard) handleSignIn(w http.ResponseWriter, r *http.Request) error {
	h := d.opts.Hooks
	if h.SignIn == nil {
		return withStatus(http.StatusBadRequest, "this nerve signs in only from the command line: `nerve node auth %s`", r.PathValue("node"))
	}
	s, err := d.session(r)
	if err != nil {
		return err
	}
	id := r.PathValue("node")
	spec, err := s.Spec(id)
	if err != nil {
		return err
	}
	if h.CanSignIn != nil && !h.CanSignIn(spec) {
		return withStatus(http.StatusBadRequest, "node %q does not sign in: only mcp nodes of a server over HTTP (--url) use OAuth", id)
	}
	key := s.Name() + "/" + id
	d.signMu.Lock()
	if d.signing[key] {
		d.signMu.Unlock()
		return withStatus(http.StatusConflict, "a sign-in of node %q is in progress: open the address it showed, or wait for it to time out", id)
	}
	d.signing[key] = true
	d.signMu.Unlock()

	shown := make(chan string, 1)
	done := make(chan error, 1)
	d.wg.Go(func() {
		defer func() {
			d.signMu.Lock()
			delete(d.signing, key)
			d.signMu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(d.ctx, signInWait)
		defer cancel()
		signed, err := h.SignIn(ctx, spec, func(u string) {
			// To the page that asked, and to every page: the request may
			// have stopped waiting.
			select {
			case shown <- u:
			default:
			}
			d.calls.notify(s.Name(), "signin", signInResult{Node: id, URL: u})
		})
		if err == nil {
			err = d.opts.Restart(ctx, s, id)
		}
		res := signInResult{Node: id, OK: err == nil, Signed: signed}
		if err != nil {
			res.Error = err.Error()
		}
		d.calls.notify(s.Name(), "signin", res)
		done <- err
	})
	select {
	case u := <-shown:
		writeJSON(w, http.StatusOK, map[string]string{"url": u})
		return nil
	case err := <-done:
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]bool{"done": true})
		return nil
	case <-time.After(signInAsk):
		// The flow has not asked yet (a slow server): its address comes
		// on the event stream.
		writeJSON(w, http.StatusAccepted, map[string]bool{"pending": true})
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

// signInResult is news of a sign-in, sent on the event stream: the
// address to open (URL), or its end.
type signInResult struct {
	Node   string `json:"node"`
	URL    string `json:"url,omitempty"`
	OK     bool   `json:"ok,omitempty"`
	Signed bool   `json:"signed,omitempty"`
	Error  string `json:"error,omitempty"`
}
