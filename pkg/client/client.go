// Package client is the Go client of nerve's local API: a Client talks to
// a daemon over its Unix socket (or to an embedded daemon in memory) and
// returns typed errors. The command line and the REPL reach sessions only
// through it; any Go program may import it. It links nothing of nerve but
// pkg/api, and not the MCP SDK: its results are JSON, which
// pkg/client/mcpclient decodes into the SDK's types.
package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Options configure a Client.
type Options struct {
	// Socket is the daemon's Unix socket.
	Socket string
	// Dial, if set, opens connections instead of Socket (embedded mode
	// dials an in-memory listener).
	Dial func(ctx context.Context) (net.Conn, error)
	// Version is this program's build version; when the daemon's differs,
	// OnVersionMismatch is called once.
	Version string
	// OnVersionMismatch is told the daemon's version the first time it
	// differs from Version.
	OnVersionMismatch func(daemonVersion string)
	// Environ, if set, is the environment sent with the requests that add,
	// replace or restart a node (api.HeaderClientEnv): ${VAR} in the node's spec
	// resolves against it first.
	Environ func() []string
	// Revive, if set, is called when a request could not reach the daemon
	// at all (its socket refused the connection or is gone, or the
	// connection was closed before a byte of the request was written) or
	// the daemon answered that it is stopping and ran nothing of it, as
	// when the daemon stopped between two requests of one command, or
	// during one. When it returns nil (a daemon answers again) the
	// request is sent once more.
	Revive func(ctx context.Context) error
	// Caller names this client in the call log (api.HeaderCaller): "cli",
	// "repl", or a program's name; empty logs its calls as "api".
	Caller string
	// CallMeta, if set, is sent as the _meta of every call this client
	// makes (api.CallRequest.Meta), beside a call's own: a client run
	// inside a node's call says so (node.FromCallMetaKey).
	CallMeta map[string]any
	// OneShot makes each request on a connection of its own, with no pool
	// and no goroutine of the client's: the cheapest start for a process
	// that makes a request or two and exits (`nerve call`).
	OneShot bool
	// Header, if set, adds headers of the caller's to each request, read
	// from the request's context: the command line's W3C trace context
	// (traceparent), so that the daemon's spans join its trace.
	Header func(ctx context.Context, h http.Header)
}

// sentConn is a connection that knows whether any byte was ever written
// on it. A fresh connection that failed with nothing written carried no
// request: a daemon that stops resets the connections still queued on
// its socket, and the write of the request then fails (EPIPE), or the
// read of an answer it never asked for (ECONNRESET).
type sentConn struct {
	net.Conn
	wrote atomic.Bool
}

func (c *sentConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.wrote.Store(true)
	}
	return n, err
}

// notSentError marks a request that was never sent — its connection
// could not be made, or a fresh one failed before any byte of it was
// written — so sending it again cannot run anything twice.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// Client talks to one daemon. It is safe for concurrent use.
type Client struct {
	opts     Options
	dial     func(ctx context.Context) (net.Conn, error)
	http     *http.Client
	warnOnce sync.Once
}

const base = "http://nerve/v" + api.Version

// New returns a client; it connects on first use.
func New(opts Options) *Client {
	dial := opts.Dial
	if dial == nil {
		sock := opts.Socket
		dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
	}
	if opts.OneShot {
		return &Client{opts: opts, dial: dial, http: &http.Client{Transport: oneShot{dial}}}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := dial(ctx)
			if err != nil {
				return nil, &notSentError{err}
			}
			return &sentConn{Conn: conn}, nil
		},
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &Client{opts: opts, dial: dial, http: &http.Client{Transport: tr}}
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// send makes a request and returns the response when its status is 2xx;
// any other answer becomes an *Error.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.sendWith(ctx, method, path, nil, body)
}

// sendWith is send with headers of the request's own (If-Match).
func (c *Client) sendWith(ctx context.Context, method, path string, hdr http.Header, body any) (*http.Response, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
	}
	resp, err := c.sendOnce(ctx, method, path, hdr, body != nil, data)
	// A daemon through ssh that ssh could not reach is not revived: ssh
	// would fail the same way again.
	if err != nil && c.opts.Revive != nil && unsent(method, err) && sshError(err) == nil && ctx.Err() == nil && revives(ctx) {
		if rerr := c.opts.Revive(ctx); rerr != nil {
			return nil, rerr
		}
		resp, err = c.sendOnce(ctx, method, path, hdr, body != nil, data)
	}
	return resp, err
}

type reviveKey struct{}

// WithRevive returns ctx saying whether a request made with it may call
// Options.Revive (the default is yes). A program that watches the daemon
// in the background (the REPL) says no for those requests, so that a
// daemon someone stopped stays stopped until the person acts.
func WithRevive(ctx context.Context, ok bool) context.Context {
	return context.WithValue(ctx, reviveKey{}, ok)
}

func revives(ctx context.Context) bool {
	ok, set := ctx.Value(reviveKey{}).(bool)
	return ok || !set
}

// unsent reports whether a request that failed with err may be sent again
// without running anything twice: it never reached the daemon (the
// connection was refused, or closed before a byte of the request was
// written), the daemon answered that it ran nothing because it is stopping
// (api.CodeStopping), or it only reads (GET) and its connection was
// dropped before an answer — a daemon that stops closes the connections
// still waiting in its socket's queue.
func unsent(method string, err error) bool {
	var ns *notSentError
	var e *Error
	switch {
	case errors.As(err, &ns):
		return true
	case errors.As(err, &e):
		return e.Code == api.CodeStopping
	}
	return method == http.MethodGet && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

func (c *Client) sendOnce(ctx context.Context, method, path string, hdr http.Header, hasBody bool, data []byte) (*http.Response, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(data)
	}
	// The connection the request goes on, to tell afterwards whether any
	// of it was written.
	var conn *sentConn
	trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if sc, ok := info.Conn.(*sentConn); ok && !info.Reused {
			conn = sc // a reused one is the transport's to retry
		}
	}})
	req, err := http.NewRequestWithContext(trace, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Caller != "" {
		req.Header.Set(api.HeaderCaller, c.opts.Caller)
	}
	if c.opts.Header != nil {
		c.opts.Header(ctx, req.Header)
	}
	builds := method == http.MethodPost && (strings.HasSuffix(path, "/nodes") || strings.HasSuffix(path, "/restart")) ||
		method == http.MethodPut && strings.Contains(path, "/nodes/") // add, restart, replace
	if c.opts.Environ != nil && builds {
		if data, err := json.Marshal(c.opts.Environ()); err == nil {
			req.Header.Set(api.HeaderClientEnv, base64.StdEncoding.EncodeToString(data))
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = unwrapURL(err)
		if se := sshError(err); se != nil {
			return nil, se // its message says what failed and what to do
		}
		if conn != nil && !conn.wrote.Load() {
			err = &notSentError{err}
		}
		return nil, fmt.Errorf("%w (%w): start it with `nerve daemon start`, or see `nerve daemon status`", ErrDaemonUnavailable, err)
	}
	c.checkVersion(resp)
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, responseError(resp)
	}
	return resp, nil
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c *Client) checkVersion(resp *http.Response) {
	v := resp.Header.Get(api.HeaderVersion)
	if c.opts.Version == "" || c.opts.OnVersionMismatch == nil || v == c.opts.Version {
		return
	}
	// A build without a VCS stamp (`go run`, "devel") cannot be told
	// apart from any other: only two stamped builds can differ for sure.
	if v == "devel" || c.opts.Version == "devel" {
		return
	}
	c.warnOnce.Do(func() { c.opts.OnVersionMismatch(v) })
}

// do makes a request and decodes a JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.doWith(ctx, method, path, nil, body, out)
	return err
}

// doWith is do with headers of the request's own; it returns the
// answer's headers.
func (c *Client) doWith(ctx context.Context, method, path string, hdr http.Header, body, out any) (http.Header, error) {
	resp, err := c.sendWith(ctx, method, path, hdr, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("%w: decoding %s %s: %v", ErrProtocol, method, path, err)
	}
	return resp.Header, nil
}

// Version returns the daemon's version and state; it is the cheapest way
// to know a daemon answers.
func (c *Client) Version(ctx context.Context) (api.VersionInfo, error) {
	var v api.VersionInfo
	err := c.do(ctx, http.MethodGet, "/version", nil, &v)
	return v, err
}

// Kinds returns the node kinds the daemon can build.
func (c *Client) Kinds(ctx context.Context) ([]string, error) {
	var k []string
	err := c.do(ctx, http.MethodGet, "/kinds", nil, &k)
	return k, err
}

// Shutdown asks the daemon to stop every node and exit.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/shutdown", nil, nil)
}

// Sessions lists the daemon's sessions.
func (c *Client) Sessions(ctx context.Context) ([]api.SessionInfo, error) {
	var s []api.SessionInfo
	err := c.do(ctx, http.MethodGet, "/sessions", nil, &s)
	return s, err
}

// RemoveSession stops every node of a session and forgets it.
func (c *Client) RemoveSession(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/sessions/"+url.PathEscape(name), nil, nil)
}

// Session returns a handle on the session called name; nothing is asked
// of the daemon until a method is called.
func (c *Client) Session(name string) *Session {
	return &Session{c: c, name: name, path: "/sessions/" + url.PathEscape(name)}
}

// Session is one session of the daemon.
type Session struct {
	c    *Client
	name string
	path string
}

// Name returns the session's name.
func (s *Session) Name() string { return s.name }

func (s *Session) nodePath(id string) string { return s.path + "/nodes/" + url.PathEscape(id) }

// Nodes returns the Info of every node, in the order they were added.
func (s *Session) Nodes(ctx context.Context) ([]api.Info, error) {
	var infos []api.Info
	err := s.c.do(ctx, http.MethodGet, s.path+"/nodes", nil, &infos)
	return infos, err
}

// Node returns a node's Info and spec.
func (s *Session) Node(ctx context.Context, id string) (api.NodeDetail, error) {
	d, _, err := s.NodeTag(ctx, id)
	return d, err
}

// NodeTag is Node with the version tag of the spec it returns (its
// ETag): given to ReplaceIf, it makes the replace happen only if nobody
// changed the node since.
func (s *Session) NodeTag(ctx context.Context, id string) (api.NodeDetail, string, error) {
	var d api.NodeDetail
	h, err := s.c.doWith(ctx, http.MethodGet, s.nodePath(id), nil, nil, &d)
	if err != nil {
		return d, "", err
	}
	return d, h.Get(api.HeaderETag), nil
}

// Add adds a node built from spec and starts it, making the session if it
// does not exist. A node that was added but did not start is in the
// session in ERROR: the error matches ErrStartFailed and its Node field
// holds the node's Info.
func (s *Session) Add(ctx context.Context, spec api.Spec) (api.Info, error) {
	r, err := s.AddNode(ctx, spec)
	return r.Info, err
}

// AddNode is Add answering with the whole response: the node's Info and
// the warnings of its kind's check. A spec the check refuses (a graph
// with mistakes) matches ErrBadRequest, its message listing every mistake.
func (s *Session) AddNode(ctx context.Context, spec api.Spec) (api.NodeResponse, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.path+"/nodes", spec, &r)
	return r, err
}

// CheckNode checks spec as AddNode would — its id free, its kind's check
// (a graph's mistakes, each at LINE:COLUMN) — and adds nothing: the
// check's warnings, or the error AddNode would answer (ErrBadRequest,
// ErrExists).
func (s *Session) CheckNode(ctx context.Context, spec api.Spec) ([]string, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.path+"/nodes?dry_run=1", spec, &r)
	return r.Warnings, err
}

// Replace puts a node built from spec in the place of node spec.ID in one
// step, checked first as an add is: a spec with mistakes (ErrBadRequest)
// changes nothing, and a daemon killed meanwhile comes back with the old
// spec or the new one. A new node that did not start is in ERROR: the
// error matches ErrStartFailed.
func (s *Session) Replace(ctx context.Context, spec api.Spec) (api.NodeResponse, error) {
	r, _, err := s.ReplaceIf(ctx, spec, "")
	return r, err
}

// ReplaceIf is Replace when node spec.ID's spec is still the one NodeTag
// answered tag for (If-Match): if someone changed it since, nothing
// changes and the error matches ErrChanged — read the node again and
// make the change anew. An empty tag checks nothing, as Replace. It
// returns the new spec's tag.
func (s *Session) ReplaceIf(ctx context.Context, spec api.Spec, tag string) (api.NodeResponse, string, error) {
	var r api.NodeResponse
	var hdr http.Header
	if tag != "" {
		hdr = http.Header{api.HeaderIfMatch: {tag}}
	}
	h, err := s.c.doWith(ctx, http.MethodPut, s.nodePath(spec.ID), hdr, spec, &r)
	if err != nil {
		return r, "", err
	}
	return r, h.Get(api.HeaderETag), nil
}

// RunRecord returns the whole record of run runID of graph nodeID, as
// JSON (docs/daemon.md): each step's arguments as JSON, its text whole up
// to 64 KiB.
func (s *Session) RunRecord(ctx context.Context, nodeID, runID string) (json.RawMessage, error) {
	var rec json.RawMessage
	err := s.c.do(ctx, http.MethodGet, s.nodePath(nodeID)+"/runs/"+url.PathEscape(runID), nil, &rec)
	return rec, err
}

// Remove stops a node and removes it.
func (s *Session) Remove(ctx context.Context, id string) error {
	return s.c.do(ctx, http.MethodDelete, s.nodePath(id), nil, nil)
}

// Restart stops a node (from any state) and starts it again.
func (s *Session) Restart(ctx context.Context, id string) (api.Info, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/restart", nil, &r)
	return r.Info, err
}

// Stop stops a node and keeps it stopped — across daemon restarts — until
// Start: it keeps its settings and catalogue but offers no tools.
func (s *Session) Stop(ctx context.Context, id string) (api.Info, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/stop", nil, &r)
	return r.Info, err
}

// Start starts a node that Stop stopped (or any node not running).
func (s *Session) Start(ctx context.Context, id string) (api.Info, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/start", nil, &r)
	return r.Info, err
}

// Settings returns the session's settings.
func (s *Session) Settings(ctx context.Context) (api.Settings, error) {
	var st api.Settings
	err := s.c.do(ctx, http.MethodGet, s.path+"/settings", nil, &st)
	return st, err
}

// SetSettings replaces the session's settings.
func (s *Session) SetSettings(ctx context.Context, st api.Settings) (api.Settings, error) {
	var out api.Settings
	err := s.c.do(ctx, http.MethodPut, s.path+"/settings", st, &out)
	return out, err
}

// Sync refreshes an mcp node's tool catalogue: a node that is not running
// is started for it and stopped again.
func (s *Session) Sync(ctx context.Context, id string) (api.Info, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/sync", nil, &r)
	return r.Info, err
}

// Interrupt cancels what a node has in flight.
func (s *Session) Interrupt(ctx context.Context, id string) error {
	return s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/interrupt", nil, nil)
}

// Do makes a request on one of the session's routes: path is relative to
// the session (e.g. "/nodes/fs/prompts"), body (if not nil) is sent as
// JSON and a JSON answer is decoded into out (if not nil). The typed
// methods, and pkg/client/mcpclient's, are built on it.
func (s *Session) Do(ctx context.Context, method, path string, body, out any) error {
	return s.c.do(ctx, method, s.path+path, body, out)
}

// NodePath returns the path of node id's routes relative to the session,
// for Do: NodePath("fs")+"/prompts".
func NodePath(id string) string { return "/nodes/" + url.PathEscape(id) }

// Toolset returns every tool of every node, whatever its state, as
// node.tool; the daemon answers at once (a node that is starting is listed
// from its catalogue).
func (s *Session) Toolset(ctx context.Context) ([]api.Tool, error) {
	var tools []api.Tool
	err := s.c.do(ctx, http.MethodGet, s.path+"/tools", nil, &tools)
	return tools, err
}

// Call calls tool on node id with JSON arguments (nil means {}) and
// returns its result as the daemon sent it: an MCP CallToolResult as JSON
// (pkg/client/mcpclient.Call decodes it). Progress, log messages,
// streamed text and the node's state changes go to observe (if set) as
// they arrive, on the caller's goroutine. Cancelling ctx closes the
// connection, which cancels the call in the daemon (and the node is told).
// A tool that ran and failed is a result with isError.
func (s *Session) Call(ctx context.Context, id, tool string, args json.RawMessage, observe func(api.CallLine)) (json.RawMessage, error) {
	return s.CallMeta(ctx, id, tool, args, nil, observe)
}

// CallMeta is Call with the call's _meta (e.g. a graph's
// "nerve.dev/resume"), which the node reads beside the arguments.
func (s *Session) CallMeta(ctx context.Context, id, tool string, args json.RawMessage, meta map[string]any, observe func(api.CallLine)) (json.RawMessage, error) {
	res, _, err := s.call(ctx, id, api.CallRequest{Tool: tool, Arguments: args, Meta: meta}, observe)
	return res, err
}

// CallLine has the daemon parse and run line, a Commander line naming
// node id (`@fs read_file path=/tmp/a`), in one request: the daemon
// parses it against the node's tools as the Commander would. When the
// line is not a call the daemon can make (help, a line that does not
// parse), nothing runs and tools holds the node's tools (a JSON list of
// MCP tools) for the caller to parse the line itself; otherwise result is
// the call's result, as Call's.
func (s *Session) CallLine(ctx context.Context, id, line string, observe func(api.CallLine)) (result, tools json.RawMessage, err error) {
	return s.call(ctx, id, api.CallRequest{Line: line}, observe)
}

func (s *Session) call(ctx context.Context, id string, req api.CallRequest, observe func(api.CallLine)) (result, tools json.RawMessage, err error) {
	if len(s.c.opts.CallMeta) > 0 {
		meta := maps.Clone(s.c.opts.CallMeta)
		maps.Copy(meta, req.Meta)
		req.Meta = meta
	}
	resp, err := s.c.send(ctx, http.MethodPost, s.nodePath(id)+"/call", req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var line api.CallLine
		if err := dec.Decode(&line); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if se := sshError(err); se != nil {
				return nil, nil, se
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, nil, fmt.Errorf("%w: the call's answer was cut before its result (did the daemon stop? see `nerve daemon status`)", ErrDaemonUnavailable)
			}
			return nil, nil, fmt.Errorf("%w: reading the call's answer: %v", ErrProtocol, err)
		}
		switch line.Kind {
		case api.LineResult:
			if len(line.Result) == 0 || string(line.Result) == "null" {
				return nil, nil, fmt.Errorf("%w: a result line without a result", ErrProtocol)
			}
			return line.Result, nil, nil
		case api.LineTools:
			if len(line.Tools) == 0 {
				return nil, nil, fmt.Errorf("%w: a tools line without tools", ErrProtocol)
			}
			return nil, line.Tools, nil
		case api.LineError:
			if ctx.Err() != nil {
				// The daemon's answer to the cancellation itself: through
				// ssh it can come back before the read fails.
				return nil, nil, ctx.Err()
			}
			if line.Error == nil {
				return nil, nil, fmt.Errorf("%w: an error line without an error", ErrProtocol)
			}
			return nil, nil, errorFrom(0, *line.Error)
		default:
			if observe != nil {
				observe(line)
			}
		}
	}
}
