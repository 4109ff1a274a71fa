package mcpnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/backoff"
	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/httpretry"
	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind name.
const Kind = mcpconf.Kind

// Defaults; see docs/mcp.md.
const (
	DefaultCallTimeout  = 60 * time.Second // a call with no progress for this long is cancelled
	DefaultCallCap      = 10 * time.Minute // no call runs longer, progress or not
	DefaultStartTimeout = 30 * time.Second // connect + initialize + listing
	defaultStopGrace    = 200 * time.Millisecond
	defaultTermGrace    = 2 * time.Second
	defaultRestartBase  = time.Second
	defaultRestartMax   = time.Minute
	// RestartOnFailure is the restart policy that brings a node back from
	// ERROR by itself, with exponential backoff.
	RestartOnFailure = "on-failure"
)

// config holds the settings that are not part of a spec: defaults, and the
// hooks tests and benchmarks use.
type config struct {
	startTimeout time.Duration
	callCap      time.Duration
	stopGrace    time.Duration
	termGrace    time.Duration
	restartBase  time.Duration
	restartMax   time.Duration
	// maxLine bounds one line a stdio server writes; 0 means the SDK's
	// default (16 MB).
	maxLine int
	// transport, when set, replaces the spec's transport (in-memory
	// servers in tests and benchmarks).
	transport func() mcp.Transport
	lookup    func(string) (string, bool)
	environ   func() []string
	// authorize completes OAuth sign-in; nil reports that it is needed.
	authorize Authorizer
	// tokens keeps sign-ins across daemon restarts (signin.go); nil: memory.
	tokens TokenStore
	// pingInterval and pingTimeout: ping.go (0 interval: off).
	pingInterval time.Duration
	pingTimeout  time.Duration
}

func defaultConfig() config {
	return config{
		startTimeout: DefaultStartTimeout,
		callCap:      DefaultCallCap,
		stopGrace:    defaultStopGrace,
		termGrace:    defaultTermGrace,
		restartBase:  defaultRestartBase,
		restartMax:   defaultRestartMax,
		pingTimeout:  defaultPingTimeout,
		lookup:       os.LookupEnv,
		environ:      os.Environ,
	}
}

// Node is an mcp node. Its methods are safe for concurrent use.
type Node struct {
	node.Base
	server mcpconf.Server // as written: ${VAR} expanded at each start
	opts   mcpconf.Options
	env    node.Env
	log    *zap.Logger
	cfg    config

	// Lock order (doc.go): lifeMu, catalogMu, mu; callsMu is a leaf.
	// lifeMu is held for a whole start or stop; Stop cancels a start in
	// progress (startCancel, under mu) before it waits for lifeMu, so a
	// hanging connect cannot hold it up.

	// lifeMu serialises start, stop and restart, and guards oauth.
	lifeMu sync.Mutex
	oauth  auth.OAuthHandler // http only; made on first connect
	// refreshFailed: the authorization server refused to refresh the
	// saved sign-in (signin.go), for the message.
	refreshFailed atomic.Pointer[string]

	// mu guards the fields below.
	mu            sync.RWMutex
	startCancel   context.CancelCauseFunc // ends the start in progress
	conn          *conn
	tools         []*mcp.Tool
	toolIndex     map[string]*mcp.Tool
	resources     []*mcp.Resource
	templates     []*mcp.ResourceTemplate
	prompts       []*mcp.Prompt
	caches        map[string]listCache // by list: tools, resources, resource_templates, prompts
	initResult    *mcp.InitializeResult
	lastStderr    *childproc.Ring // of the current or last process
	pid           int
	wantRunning   bool
	restartCancel context.CancelFunc
	restartDone   chan struct{}
	restarts      int
	failStreak    int
	toolsNote     string    // the tools capability, when the server did not declare it (listing.go)
	toolsWarning  string    // tools/list failed at start; the node runs without tools (listing.go)
	catalogued    bool      // the lists come from (or were saved to) catalog.json
	catalogSaved  time.Time // when the catalogue was written
	onUpdated     func(uri string)

	// catalogMu serialises writing catalog.json (catalog.go).
	catalogMu sync.Mutex

	subs atomic.Int32 // resource subscriptions held

	// logLevel is the level SetLoggingLevel set, which a server of
	// 2026-07-28 is sent with every request (protocol.go).
	logLevel atomic.Pointer[string]
	// legacy: the server asked for input the old way in a call of
	// 2026-07-28; the node speaks 2025-11-25 with it (speakLegacy).
	legacy atomic.Bool
	// probeNext makes the next start negotiate even when the catalogue
	// remembers a version (Sync).
	probeNext atomic.Bool

	// idle stops the server after the idle time without a call (idle.go).
	idle *time.Timer

	// callsMu guards calls.
	callsMu sync.Mutex
	calls   map[string]*call // by progress token
	seq     atomic.Int64

	// cancelled counts the calls that ended with their context ended
	// (CallsCancelled); guarded by callsMu.
	cancelled int64
}

func newNode(spec node.Spec, env node.Env, cfg config) (*Node, error) {
	srv, opts, err := mcpconf.ServerFromSpec(spec)
	if err != nil {
		return nil, err
	}
	switch opts.Restart {
	case "", "no", "never", RestartOnFailure:
	default:
		return nil, fmt.Errorf("mcp node %q: unknown restart policy %q: use %q, or leave it out for none", spec.ID, opts.Restart, RestartOnFailure)
	}
	switch opts.Start {
	case "", "eager", "lazy":
	default:
		return nil, fmt.Errorf("mcp node %q: unknown start policy %q: use eager or lazy", spec.ID, opts.Start)
	}
	if err := protocolOption(opts.Protocol, srv.Transport); err != nil {
		return nil, fmt.Errorf("mcp node %q: %w", spec.ID, err)
	}
	if d := time.Duration(opts.StartTimeout); d > 0 {
		cfg.startTimeout = d // option start_timeout (--start-timeout)
	}
	if cfg.pingInterval == 0 { // else set by a test
		if cfg.pingInterval, err = pingInterval(opts.Ping); err != nil {
			return nil, fmt.Errorf("mcp node %q: %w", spec.ID, err)
		}
	}
	n := &Node{server: srv, opts: opts, env: env, log: env.Log(), cfg: cfg, calls: map[string]*call{}}
	n.idle = time.AfterFunc(time.Hour, n.idleStop) // idle.go; set by touch
	n.idle.Stop()
	n.Init(spec, env)
	n.loadCatalog()
	return n, nil
}

// conn is one connection to the server, from connect to close.
type conn struct {
	cs   *mcp.ClientSession
	proc *process // nil for http and sse
	// ctx is done when the connection ends; requests the server makes of
	// the person (sampling, elicitation) honour it.
	ctx     context.Context
	cancel  context.CancelFunc
	closing atomic.Bool   // nerve is closing it: its end is no fault
	done    chan struct{} // closed when the watcher has set fault
	fault   error
	// refresh wakes the refresher; pending says which lists.
	refresh chan struct{}
	pending atomic.Uint32
	wg      sync.WaitGroup
	started time.Time
	// tapped: progress and log notifications come through a tap (tapConn,
	// or the guard of an http or sse node), not the SDK's handlers.
	tapped bool
	// broken: a call found the server gone; the next call reconnects.
	broken atomic.Bool
	// noPing: the server answered ping "method not found" (ping.go).
	noPing atomic.Bool
}

// errSessionGone: an http server refused a call because it no longer
// knows nerve's session (it restarted); the call was not run.
var errSessionGone = errors.New("the server no longer knows nerve's session")

const (
	listTools uint32 = 1 << iota
	listResources
	listPrompts
)

func (c *conn) requestRefresh(what uint32) {
	c.pending.Or(what)
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}

// Start connects to the server, initializes the session and lists what it
// offers. It returns once the node is READY or ERROR.
func (n *Node) Start(ctx context.Context) error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	n.mu.Lock()
	n.wantRunning = true
	n.mu.Unlock()
	return n.startLocked(ctx)
}

// errStoppedDuringStart ends a start that Stop interrupted.
var errStoppedDuringStart = errors.New("the node was stopped while it started")

func (n *Node) startLocked(ctx context.Context) error {
	syncs.AssertLocked(&n.lifeMu)
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return fmt.Errorf("starting node %q: %w", n.ID(), err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	n.mu.Lock()
	n.startCancel = cancel
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.startCancel = nil
		n.mu.Unlock()
		cancel(nil)
	}()
	c, err := n.connect(ctx, n.probeNext.Swap(false))
	if errors.Is(err, errRememberedVersion) && ctx.Err() == nil {
		// The server spoke an older version before and refuses it now
		// (it was upgraded): negotiate afresh.
		n.log.Info("the server refused the protocol version it spoke before; negotiating", zap.Error(err))
		c, err = n.connect(ctx, true)
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), errStoppedDuringStart) {
			// Not a fault: the person stopped it. It ends STOPPED.
			if n.Machine.ToIf(node.Stopping, "", node.Starting) == nil {
				n.Machine.To(node.Stopped, "")
			}
			return fmt.Errorf("starting node %q: %w", n.ID(), errStoppedDuringStart)
		}
		if n.server.Source != nil {
			err = fmt.Errorf("%w\nfrom %s", err, n.server.Source)
		}
		n.Machine.To(node.Error, err.Error())
		return err
	}
	c.wg.Add(3)
	go func() { defer c.wg.Done(); n.watch(c) }()
	go func() { defer c.wg.Done(); n.refresher(c) }()
	go func() { defer c.wg.Done(); n.pinger(c) }() // ping.go
	if err := n.Machine.ToIf(node.Ready, "", node.Starting); err != nil {
		// The server died between listing and now; the watcher said why.
		<-c.done
		if c.fault != nil {
			return c.fault
		}
		return err
	}
	return nil
}

// connect makes a new connection and lists the server's tools, resources
// and prompts. On error nothing is left running. Probe negotiates the
// protocol version even when the catalogue remembers one (protocol.go).
func (n *Node) connect(ctx context.Context, probe bool) (*conn, error) {
	srv, err := n.server.Expand(n.cfg.lookup, "")
	if err != nil {
		return nil, fmt.Errorf("mcp node %q: %w", n.ID(), mcpconf.Explain(err, n.env.VarsWhere()))
	}
	c := &conn{done: make(chan struct{}), refresh: make(chan struct{}, 1), started: time.Now()}
	c.ctx, c.cancel = context.WithCancel(context.Background())

	var t mcp.Transport
	switch {
	case n.cfg.transport != nil:
		t = &tapTransport{Transport: n.cfg.transport(), n: n}
		c.tapped = true
	case srv.Transport == "stdio":
		env := mcpconf.ChildEnv(srv, n.cfg.environ())
		p, err := startProcess(srv.Command, env, srv.Cwd, n.cfg.stopGrace, n.cfg.termGrace)
		if err != nil {
			c.cancel()
			return nil, err
		}
		c.proc = p
		t = &tapTransport{Transport: p.transport(n.cfg.maxLine, n.log), n: n}
		c.tapped = true
		n.mu.Lock()
		n.lastStderr, n.pid = p.Stderr(), p.Pid()
		n.mu.Unlock()
	case srv.Transport == "sse":
		t = &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: httpClient(srv.Headers, n.opts.Retry.Over(httpretry.Policy{}), n.notified)}
		c.tapped = true // by the guard (guardTransport)
	default:
		hc := httpClient(srv.Headers, n.opts.Retry.Over(httpretry.Policy{}), n.notified)
		c.tapped = true // by the guard (guardTransport)
		oauth, err := n.oauthHandlerLocked(hc)
		if err != nil {
			c.cancel()
			return nil, err
		}
		t = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, OAuthHandler: oauth}
	}

	client := n.newClient(c)
	if err := n.setRoots(client); err != nil {
		c.cancel()
		if c.proc != nil {
			c.proc.shutdown()
		}
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, n.cfg.startTimeout)
	defer cancel()
	fail := func(err error) (*conn, error) {
		c.closing.Store(true) // the fault is reported here, not by a watcher
		c.cancel()
		if c.cs != nil {
			n.closeSession(ctx, c)
		}
		if c.proc != nil {
			if _, ok := c.proc.exitedByItself(); !ok {
				// It may be exiting right now; give it a moment so the
				// message can say how it ended. A closed stdout nearly
				// always means the process is gone, and reaping it took
				// longer than 50 ms on a loaded machine ("closed its
				// stdout" instead of "exited with code 7"): wait longer
				// for that.
				d := 50 * time.Millisecond
				if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					d = 2 * time.Second
				}
				c.proc.waitExited(ctx, d)
			}
			msg := n.explain(err, c.proc, true, sctx.Err() != nil && ctx.Err() == nil)
			c.proc.shutdown()
			return nil, errors.New(msg)
		}
		return nil, errors.New(n.explain(err, nil, true, sctx.Err() != nil && ctx.Err() == nil))
	}
	// The connection lives on c.ctx, not on the start-up timeout: the SSE
	// transport binds its GET stream to the context Connect is given, and
	// a stream tied to sctx closed as soon as start-up was over. The
	// timeout still bounds the handshake, by ending c.ctx.
	var connected atomic.Bool
	stopTimer := context.AfterFunc(sctx, func() {
		if !connected.Load() {
			c.cancel()
		}
	})
	version, remembered := n.askVersion(probe)
	cs, err := client.Connect(c.ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	connected.Store(true)
	stopTimer()
	if err != nil {
		if remembered && refusedVersion(err) && sctx.Err() == nil {
			_, ferr := fail(err)
			return nil, fmt.Errorf("%w: %v", errRememberedVersion, ferr)
		}
		return fail(err)
	}
	c.cs = cs
	if err := n.checkVersion(cs.InitializeResult().ProtocolVersion); err != nil {
		c.closing.Store(true)
		c.cancel()
		n.closeSession(ctx, c)
		return nil, err
	}
	if s, ok := nerveSession(cs.InitializeResult()); ok {
		c.closing.Store(true)
		c.cancel()
		n.closeSession(ctx, c)
		return nil, fmt.Errorf("node %s's server is nerve itself (session %s): a session cannot contain a nerve session, whose tools would include its own without end — remove it with `nerve node rm %s`", n.ID(), s, n.ID())
	}
	if target, ok := nerveNode(cs.InitializeResult()); ok {
		c.closing.Store(true)
		c.cancel()
		n.closeSession(ctx, c)
		return nil, fmt.Errorf("node %s's server is nerve's own endpoint of node %s: a node reached through nerve can call back into nerve without end (a graph that called itself this way ran 9,980 calls deep) — call that node directly as @%s, and remove this one with `nerve node rm %s`", n.ID(), target, target, n.ID())
	}
	keep := false
	if err := n.discover(sctx, c, listTools|listResources|listPrompts); err != nil {
		if keep = n.keepWithoutTools(err); !keep { // listing.go
			return fail(err)
		}
		_ = n.discover(sctx, c, listResources|listPrompts)
	}
	n.mu.Lock()
	n.conn = c
	n.initResult = cs.InitializeResult()
	n.mu.Unlock()
	if !keep {
		n.saveCatalog() // not a failed listing's empty one
	}
	return c, nil
}

func (n *Node) newClient(c *conn) *mcp.Client {
	impl := &mcp.Implementation{Name: "nerve", Version: nerveVersion()}
	onLog, onProgress := n.onLog, n.onProgress
	if c.tapped {
		onLog = func(context.Context, *mcp.LoggingMessageRequest) {}
		onProgress = func(context.Context, *mcp.ProgressNotificationClientRequest) {}
	}
	// The roots capability is advertised only when roots are configured
	// (see setRoots); the SDK's default advertises it always.
	caps := &mcp.ClientCapabilities{}
	if len(n.opts.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	// Both modes of elicitation (2025-11-25): a URL-mode request goes
	// where a form goes (Hooks.Elicit), and whoever answers shows the URL
	// and waits for the person (the Commander, a graph's ask: step's
	// asker), or passes it to an MCP client that declared URL mode (nerve
	// mcp serve); issue 27.
	caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	// nerve polls a tool call that its server turns into a task
	// (tasks.go).
	caps.AddExtension(TasksExtension, map[string]any{})
	client := mcp.NewClient(impl, &mcp.ClientOptions{
		Capabilities: caps,
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return n.sample(ctx, c, req.Params)
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return n.elicit(ctx, c, req.Params)
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			if req.Params != nil {
				n.log.Info("the server says a URL elicitation is complete", zap.String("elicitation", req.Params.ElicitationID))
			}
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.requestRefresh(listTools) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.requestRefresh(listResources) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.requestRefresh(listPrompts) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			n.mu.RLock()
			f := n.onUpdated
			n.mu.RUnlock()
			if f != nil && req.Params != nil {
				f(req.Params.URI)
			}
		},
		LoggingMessageHandler:       onLog,
		ProgressNotificationHandler: onProgress,
	})
	client.AddSendingMiddleware(n.modernMeta, taskCallMiddleware)
	registerTaskMethods(client)
	return client
}

func nerveVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// nerveSession reports whether the server is a nerve session's MCP server
// (internal/mcpserver: name "nerve", title "nerve session NAME") and names
// the session.
func nerveSession(init *mcp.InitializeResult) (string, bool) {
	if init == nil || init.ServerInfo == nil || init.ServerInfo.Name != "nerve" {
		return "", false
	}
	rest, ok := strings.CutPrefix(init.ServerInfo.Title, "nerve session")
	if !ok {
		return "", false
	}
	if rest = strings.TrimSpace(rest); rest == "" {
		rest = "?"
	}
	return rest, true
}

// nerveNode reports whether the server is nerve's endpoint of one node
// (internal/mcpserver in node mode: name "nerve/NODE") and names the node.
func nerveNode(init *mcp.InitializeResult) (string, bool) {
	if init == nil || init.ServerInfo == nil {
		return "", false
	}
	target, ok := strings.CutPrefix(init.ServerInfo.Name, "nerve/")
	if !ok || target == "" {
		return "", false
	}
	return target, true
}

// setRoots offers the server the roots the user configured. With none
// configured nerve offers none: a server such as server-filesystem replaces
// the folders on its command line with the client's roots, so offering the
// node's cwd by default would widen (or move) what the user allowed.
func (n *Node) setRoots(client *mcp.Client) error {
	roots, err := n.rootList()
	if err != nil {
		return err
	}
	client.AddRoots(roots...)
	return nil
}

// rootList is the roots the user configured, as MCP roots.
func (n *Node) rootList() ([]*mcp.Root, error) {
	roots := make([]*mcp.Root, 0, len(n.opts.Roots))
	for _, r := range n.opts.Roots {
		d, err := mcpconf.Expand(r, n.cfg.lookup)
		if err != nil {
			return nil, fmt.Errorf("mcp node %q: roots: %w", n.ID(), err)
		}
		if strings.HasPrefix(d, "file://") {
			roots = append(roots, &mcp.Root{URI: d})
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("mcp node %q: root %q: %w", n.ID(), d, err)
		}
		roots = append(roots, &mcp.Root{URI: "file://" + filepath.ToSlash(abs), Name: filepath.Base(abs)})
	}
	return roots, nil
}

// httpClient returns a client that adds headers to every request (and
// the trace context of the call it is part of: internal/telemetry),
// retries one the server or a gateway turned away as retry says
// (retry.go), and reads every answer through a guard that hands the
// server's notifications to tap and keeps in each result what the SDK
// would drop of tasks (see guardTransport). Every request goes through
// headerTransport: the node's headers, and the Mcp-Name of the task
// methods (tasks.go).
func httpClient(headers map[string]string, retry httpretry.Policy, tap func(*jsonrpc.Request)) *http.Client {
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	var base http.RoundTripper = &headerTransport{base: telemetry.Transport(http.DefaultTransport), headers: h}
	return &http.Client{Transport: &guardTransport{base: newRetryTransport(base, retry), limit: DefaultMaxMessage, tap: tap}}
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	if name, ok := req.Context().Value(nameKey{}).(string); ok && req.Header.Get("Mcp-Name") == "" {
		req.Header.Set("Mcp-Name", name) // tasks.go
	}
	return t.base.RoundTrip(req)
}

// watch waits for the connection to end. An end nerve did not ask for is
// a fault: the node goes ERROR with the reason (and may restart).
func (n *Node) watch(c *conn) {
	err := c.cs.Wait()
	if c.closing.Load() {
		close(c.done)
		return
	}
	if c.proc != nil {
		c.proc.shutdown()
	}
	msg := n.withSource(n.explain(err, c.proc, false, false)) // listing.go
	c.fault = errors.New(msg)
	c.cancel()
	close(c.done)
	if n.Machine.ToIf(node.Error, msg, node.Starting, node.Ready, node.Busy) == nil {
		n.log.Warn("mcp server failed", zap.String("reason", msg))
		n.scheduleRestart(c)
	}
}

// Stop closes the connection and ends the server. It is the way out of
// ERROR; a pending automatic restart is cancelled.
func (n *Node) Stop(ctx context.Context) error {
	n.stopIdleClock()
	n.mu.Lock()
	n.wantRunning = false
	cancel, done := n.restartCancel, n.restartDone
	if n.startCancel != nil {
		n.startCancel(errStoppedDuringStart)
	}
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	return n.stopLocked(ctx)
}

func (n *Node) stopLocked(ctx context.Context) error {
	syncs.AssertLocked(&n.lifeMu)
	switch n.State() {
	case node.Created, node.Stopped:
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return fmt.Errorf("stopping node %q: %w", n.ID(), err)
	}
	n.mu.Lock()
	c := n.conn
	n.conn = nil
	n.mu.Unlock()
	if c != nil {
		c.closing.Store(true)
		c.cancel()
		n.cancelCalls(errStopping)
		n.closeSession(ctx, c)
		c.wg.Wait()
	}
	return n.Machine.To(node.Stopped, "")
}

// closeSession ends the server (stdio: close stdin, wait, SIGTERM, SIGKILL
// to its group) and the session.
func (n *Node) closeSession(ctx context.Context, c *conn) {
	if c.proc != nil {
		c.proc.shutdown()
	}
	if c.cs == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		c.cs.Close()
		close(done)
	}()
	// Close waits for in-flight requests; they were cancelled, and a stdio
	// server is gone, so this is quick unless an HTTP server hangs.
	t := time.NewTimer(n.cfg.stopGrace + n.cfg.termGrace + time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		n.log.Warn("closing the MCP session took too long; left it closing")
	case <-ctx.Done():
	}
}

// Restart stops and starts the node (also out of ERROR).
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Stop(ctx); err != nil {
		return err
	}
	return n.Start(ctx)
}

// scheduleRestart starts the on-failure restart loop after the connection c
// failed, if the policy asks for it and nobody stopped the node.
func (n *Node) scheduleRestart(c *conn) {
	if n.opts.Restart != RestartOnFailure {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.wantRunning || n.restartCancel != nil {
		return
	}
	if time.Since(c.started) > n.cfg.restartMax {
		n.failStreak = 0 // it ran fine for a while: start the backoff over
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.restartCancel, n.restartDone = cancel, done
	go func() {
		defer close(done)
		defer func() {
			n.mu.Lock()
			n.restartCancel, n.restartDone = nil, nil
			n.mu.Unlock()
			cancel()
		}()
		for {
			n.mu.Lock()
			delay := backoff.Backoff{Base: n.cfg.restartBase, Max: n.cfg.restartMax}.Delay(n.failStreak)
			n.failStreak++
			n.mu.Unlock()
			n.log.Info("restarting the mcp server", zap.Duration("in", delay))
			if backoff.Sleep(ctx, delay) != nil {
				return
			}
			n.lifeMu.Lock()
			if ctx.Err() != nil {
				n.lifeMu.Unlock()
				return
			}
			_ = n.stopLocked(ctx)
			err := n.startLocked(ctx)
			n.lifeMu.Unlock()
			if err == nil {
				n.mu.Lock()
				n.restarts++
				n.mu.Unlock()
				return
			}
			n.log.Warn("restart failed", zap.Error(err))
		}
	}()
}

// ListTools returns the server's tools, every page of them. A list past
// the ttl its server gave is read again in the background (listCache).
func (n *Node) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	n.refreshIfStale()
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.conn == nil {
		// Not running: a catalogued node answers from its catalogue
		// (unless it failed: then it says why).
		if st := n.State(); n.catalogued && (st == node.Created || st == node.Stopped) {
			return n.tools, nil
		}
		// A remote node whose server went away keeps its tools: the
		// next call reconnects (see revive), so it must reach CallTool.
		if n.tools != nil && n.revivableLocked() {
			return n.tools, nil
		}
		return nil, n.notReady()
	}
	return n.tools, nil
}

func (n *Node) notReady() error {
	st, reason := n.Machine.Get()
	return node.NotReady(n.ID(), st, reason)
}

// Info describes the node; Details holds the server's name, version,
// protocol version, transport, pid and the counts of what it offers.
func (n *Node) Info() node.Info {
	info := n.BaseInfo()
	n.mu.RLock()
	defer n.mu.RUnlock()
	info.Tools = len(n.tools)
	d := map[string]any{"transport": n.server.Transport}
	if n.server.Transport == "stdio" {
		info.Summary = strings.Join(n.server.Command, " ")
		if n.pid != 0 && n.conn != nil {
			d["pid"] = n.pid
		}
	} else {
		info.Summary = n.server.Transport + " " + n.server.URL
		d["url"] = n.server.URL
	}
	if r := n.initResult; r != nil {
		if r.ServerInfo != nil {
			d["server_name"] = r.ServerInfo.Name
			d["server_version"] = r.ServerInfo.Version
			if r.ServerInfo.Title != "" {
				d["server_title"] = r.ServerInfo.Title
			}
		}
		d["protocol_version"] = r.ProtocolVersion
		if r.Instructions != "" {
			d["instructions"] = r.Instructions
		}
	}
	if n.catalogued {
		d["catalogue"] = n.catalogSaved.Format(time.RFC3339)
		if n.conn == nil {
			d["cached"] = true // the lists shown come from the catalogue
		}
	}
	if st := n.State(); (st == node.Created || st == node.Stopped) && n.startsLazilyLocked() {
		d["lazy"] = true
	}
	d["protocol"] = n.Protocol()
	if cache := n.cacheInfoLocked(); len(cache) > 0 {
		d["cache"] = cache
	}
	n.pingInfoLocked(d)    // ping.go
	n.listingInfoLocked(d) // listing.go
	d["resources"] = len(n.resources)
	d["resource_templates"] = len(n.templates)
	d["prompts"] = len(n.prompts)
	if n.opts.Restart != "" {
		d["restart"] = n.opts.Restart
		d["restarts"] = n.restarts
	}
	info.Details = d
	return info
}
