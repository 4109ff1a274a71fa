package mcpserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// DefaultMaxBody caps the body of one request to the endpoint.
const DefaultMaxBody = 16 << 20

// sessionTimeout closes an MCP session that sent nothing for this long, so
// clients that vanish without DELETE do not pile up.
const sessionTimeout = 2 * time.Hour

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// Session returns the daemon's session called name. Required.
	Session func(ctx context.Context, name string) (*session.Session, error)
	// Token is the bearer token every request must carry. Required.
	Token string
	// MaxBody caps request bodies (0: DefaultMaxBody).
	MaxBody int64
	// Version is nerve's version, reported as the server's.
	Version string
	// Logger receives the handler's logs; nil discards them.
	Logger *zap.Logger
	// SessionIdle closes an MCP session with no open event stream and no
	// request for this long (0: DefaultSessionIdle).
	SessionIdle time.Duration
	// MaxSessions bounds the MCP sessions (0: DefaultMaxSessions): past
	// it, those with no open event stream are closed, least recently used
	// first.
	MaxSessions int
}

// HTTPHandler is the session's MCP endpoint over streamable HTTP:
//
//	/mcp/SESSION               every tool of the session as node.tool (?names=llm: node__tool)
//	/mcp/SESSION/node/NODE     node NODE alone, unprefixed, all its capabilities
//
// and the query chooses as `nerve mcp serve`'s flags do: ?tools=GLOBS,
// ?read_only=1, ?discover=1, ?manage=1, ?code=1 (ParseQuery).
//
// Every request must come to a loopback Host with no foreign Origin
// (DNS-rebinding protection, 403) and carry the bearer token (401). Close
// stops the servers it made.
type HTTPHandler struct {
	opts HTTPOptions
	log  *zap.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// mu guards servers.
	mu      sync.Mutex
	servers map[serverKey]*httpServer

	reapMu sync.Mutex // serialises reapSessions
}

// serverKey is one server of the handler: a session (or one node) as one
// kind of client asks for it (names, tool filter, read-only).
type serverKey struct {
	session, node, names, tools string
	readOnly, discover, manage  bool
	code                        bool
}

// httpServer is one Server and the SDK handlers in front of it: h for
// clients of 2025-11-25 and before (sessions), modern for those of
// 2026-07-28 (stateless, modern.go).
type httpServer struct {
	s      *Server
	h      http.Handler
	modern http.Handler
	stop   context.CancelFunc // ends Run
	uses   *sessionUses
	done   chan struct{} // closed when Run returned
	made   time.Time
}

// NewHTTPHandler returns the endpoint's handler.
func NewHTTPHandler(opts *HTTPOptions) (*HTTPHandler, error) {
	if opts == nil || opts.Session == nil || opts.Token == "" {
		return nil, errors.New("mcpserver: HTTPOptions need Session and Token")
	}
	o := *opts
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ctx, stop := context.WithCancel(context.Background())
	h := &HTTPHandler{opts: o, log: log, ctx: ctx, stop: stop, servers: map[serverKey]*httpServer{}}
	h.wg.Go(h.reapLoop)
	return h, nil
}

// Close stops every server the handler made and waits for them. Requests
// still in flight end with their connections.
func (h *HTTPHandler) Close() {
	h.stop()
	h.wg.Wait()
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if refuseForeign(w, r) {
		return
	}
	if !h.authorized(r) {
		w.Header().Set("Connection", "close")
		w.Header().Set("WWW-Authenticate", `Bearer realm="nerve"`)
		http.Error(w, "unauthorized: send the header `Authorization: Bearer TOKEN`; `nerve mcp url` prints the URL and the token", http.StatusUnauthorized)
		return
	}
	markAuthenticated(r.Context())
	key, ok := parsePath(r.URL.Path)
	if !ok {
		http.Error(w, "not found: use /mcp/SESSION or /mcp/SESSION/node/NODE", http.StatusNotFound)
		return
	}
	o, err := ParseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key.names, key.tools = cmp.Or(o.Names, NamesQualified), o.Tools
	key.readOnly, key.discover, key.manage, key.code = o.ReadOnly, o.Discover, o.Manage, o.Code
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBody)
	}
	srv, err := h.server(r.Context(), key)
	if err != nil {
		status := http.StatusBadGateway
		switch {
		case errors.Is(err, node.ErrNotFound) || strings.Contains(err.Error(), "no session"):
			status = http.StatusNotFound
		case errors.Is(err, errTooMany):
			status = http.StatusServiceUnavailable
		}
		http.Error(w, err.Error(), status)
		return
	}
	w, finish, ok := guardPOST(w, r, h.opts.MaxBody, h.log)
	if !ok {
		return // refused, with a JSON-RPC error for its id
	}
	defer finish()
	handler := srv.h
	if modern, handled := isModernHTTP(w, r); handled {
		return
	} else if modern {
		handler = srv.modern // modern.go
	}
	if created := srv.uses.serve(handler, w, r); created != "" {
		h.reapSessions() // a new session may pass MaxSessions
	}
}

// refuseForeign answers 403 to a request for another Host than this
// machine's loopback address (DNS rebinding) or from a web page of
// another origin, and reports whether it did. Every request to the
// endpoint's listener passes it, the mounts' too (mount.go).
func refuseForeign(w http.ResponseWriter, r *http.Request) bool {
	// A refused request ends its connection: without the token nobody
	// may keep one open (issue 22, item 4).
	if !loopbackHost(r.Host) {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("forbidden: Host %q is not this machine's loopback address (DNS-rebinding protection); connect to http://127.0.0.1:PORT", r.Host), http.StatusForbidden)
		return true
	}
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("forbidden: Origin %q: web pages may not use nerve's MCP endpoint", o), http.StatusForbidden)
		return true
	}
	return false
}

func (h *HTTPHandler) authorized(r *http.Request) bool { return hasBearer(r, h.opts.Token) }

// ParseQuery reads a client's choices from a URL query (the HTTP
// endpoint's and the daemon's …/mcp/stdio route): ?names=llm,
// ?tools=GLOBS, ?read_only=1, ?discover=1, ?manage=1, ?code=1. Node is
// not read.
func ParseQuery(q url.Values) (Options, error) {
	o := Options{Names: q.Get("names"), Tools: q.Get("tools")}
	if err := o.Validate(); err != nil {
		return Options{}, err
	}
	for name, p := range map[string]*bool{"read_only": &o.ReadOnly, "discover": &o.Discover, "manage": &o.Manage, "code": &o.Code} {
		v, err := flag(q, name)
		if err != nil {
			return Options{}, err
		}
		*p = v
	}
	return o, nil
}

// flag reads a yes/no query parameter: absent, 0/false or 1/true.
func flag(q url.Values, name string) (bool, error) {
	switch strings.ToLower(q.Get(name)) {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	}
	return false, fmt.Errorf("?%s=%s: use ?%s=1 to switch it on, or leave it out", name, q.Get(name), name)
}

// parsePath reads /mcp/SESSION or /mcp/SESSION/node/NODE.
func parsePath(p string) (serverKey, bool) {
	rest, ok := strings.CutPrefix(p, "/mcp/")
	if !ok {
		return serverKey{}, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return serverKey{session: parts[0]}, true
	case len(parts) == 3 && parts[0] != "" && parts[1] == "node" && node.ValidateID(parts[2]) == nil:
		return serverKey{session: parts[0], node: parts[2]}, true
	}
	return serverKey{}, false
}

// server returns the server for key, making it (and waiting for its first
// sync) on first use. A server whose session went away is made again.
func (h *HTTPHandler) server(ctx context.Context, key serverKey) (*httpServer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hs, ok := h.servers[key]; ok {
		select {
		case <-hs.done:
		default:
			return hs, nil
		}
	}
	if h.ctx.Err() != nil {
		return nil, errors.New("the endpoint is shutting down")
	}
	sess, err := h.opts.Session(ctx, key.session)
	if err != nil {
		return nil, err
	}
	if key.node != "" {
		if _, err := sess.Node(key.node); err != nil {
			return nil, err
		}
	}
	s := New(NewSessionBackend(sess), &Options{
		Node: key.node, Names: key.names, Tools: key.tools,
		ReadOnly: key.readOnly, Discover: key.discover, Manage: key.manage, Code: key.code,
		Version: h.opts.Version, Logger: h.log,
	})
	if err := h.makeRoomLocked(); err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(h.ctx)
	hs := &httpServer{s: s, stop: stop, uses: &sessionUses{m: map[string]*sessionUse{}}, done: make(chan struct{}), made: time.Now()}
	// A client whose stream is gone is asked nothing (http_sessions.go).
	s.live, s.via = hs.uses, "http"
	hs.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP() }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      sessionTimeout,
		MaxRequestBodyBytes: h.opts.MaxBody,
		// A client whose SSE stream breaks (a laptop sleeping, a proxy
		// timing out) resumes it with Last-Event-ID instead of losing
		// progress and results; the store is capped (10 MiB).
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	hs.modern = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP() }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: h.opts.MaxBody,
		// A client that goes away (its POST ends) cancels its call: the
		// request is the whole call in 2026-07-28.
		PropagateRequestCancellation: true,
	})
	h.wg.Go(func() {
		defer close(hs.done)
		defer stop()
		if err := s.Run(runCtx); err != nil {
			h.log.Info("MCP endpoint server ended", zap.String("session", key.session), zap.String("node", key.node), zap.Error(err))
		}
	})
	select {
	case <-s.Ready():
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	h.servers[key] = hs
	return hs, nil
}

// maxServers bounds the servers one handler keeps: each distinct
// combination of session, node and query (?tools=…) is a server with its
// own subscription to the session, so a client that varies the query
// must not grow the daemon without end.
const maxServers = 64

// idleGrace spares a server made this recently from eviction: its first
// client may be between finding it and initializing.
var idleGrace = time.Minute

// makeRoomLocked makes room for one more server by stopping those no
// client is connected to; with none to stop it refuses. h.mu is held.
func (h *HTTPHandler) makeRoomLocked() error {
	syncs.AssertLocked(&h.mu)
	if len(h.servers) < maxServers {
		return nil
	}
	for key, hs := range h.servers {
		// A server holding calls of 2026-07-28 clients between rounds
		// (mrtr.go) has clients, though none has a session.
		idle := time.Since(hs.made) > idleGrace && hs.s.pendingCount() == 0
		for range hs.s.MCP().Sessions() {
			idle = false
			break
		}
		if idle {
			hs.stop()
			delete(h.servers, key)
		}
	}
	if len(h.servers) >= maxServers {
		return fmt.Errorf("%w: %d MCP endpoint variants (?tools=, ?discover=, … ) have clients connected, the most one daemon serves: reuse a URL, or close clients you no longer need", errTooMany, maxServers)
	}
	return nil
}

// errTooMany is a request for one server too many (503).
var errTooMany = errors.New("too many MCP endpoint variants in use")

// loopbackHost reports whether a Host header names this machine's
// loopback interface (with any port).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackHost(u.Host)
}

// NewToken returns a fresh bearer token: 32 random bytes, hex.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// LoadOrCreateToken returns the token in path, creating the file (0600,
// atomically) with a fresh token when it is missing. A file others can read
// is refused: the token is the endpoint's only lock.
func LoadOrCreateToken(path string) (string, error) {
	if fi, err := os.Stat(path); err == nil {
		if fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("the MCP token file %s is readable by others (mode %v): remove it, nerve makes a new one at its next start", path, fi.Mode().Perm())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading the MCP token: %w", err)
		}
		if tok := strings.TrimSpace(string(data)); len(tok) >= 32 {
			return tok, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading the MCP token: %w", err)
	}
	tok := NewToken()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating the folder of the MCP token: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".mcp-token-*")
	if err != nil {
		return "", fmt.Errorf("writing the MCP token: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err == nil {
		_, err = f.WriteString(tok + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("writing the MCP token %s: %w", path, err)
	}
	return tok, nil
}
