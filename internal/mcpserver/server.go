package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/sendq"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Tool naming of the session mode.
const (
	// NamesQualified serves tools as node.tool (allowed by the MCP spec).
	NamesQualified = "qualified"
	// NamesLLM serves tools under their LLM-safe names (node__tool), for
	// clients that pass tool names to a model API unchanged.
	NamesLLM = "llm"
)

// Options configure a Server. Nil means defaults.
type Options struct {
	// Node, if set, serves that node alone, unprefixed, with all its
	// capabilities (node mode).
	Node string
	// Names is NamesQualified (default) or NamesLLM; session mode only.
	Names string
	// Tools is the client's own tool filter (ParseFilter: globs over
	// node.tool, "!" to exclude); it narrows the session's default
	// (Settings.Expose), never widens it.
	Tools string
	// ReadOnly exposes only tools annotated readOnlyHint.
	ReadOnly bool
	// Discover serves search_tools, describe_tool and call_tool instead
	// of the tools themselves (progressive discovery, issue 19).
	Discover bool
	// Manage adds list_nodes and restart_node (issue 19).
	Manage bool
	// Code serves run_script, a Starlark script over the exposed tools,
	// instead of the tools themselves (beside the discovery tools with
	// Discover): code mode, issue 30 (code.go).
	Code bool
	// Version is nerve's version, reported as the server's.
	Version string
	// Logger receives the server's logs; nil discards them.
	Logger *zap.Logger
}

// Validate checks the options a client chose, naming what is wrong.
func (o *Options) Validate() error {
	if err := ValidateNames(o.Names); err != nil {
		return err
	}
	_, err := ParseFilter(o.Tools)
	return err
}

// ValidateNames checks an Options.Names value.
func ValidateNames(names string) error {
	switch names {
	case "", NamesQualified, NamesLLM:
		return nil
	}
	return fmt.Errorf("unknown tool naming %q: use %q (node.tool) or %q (node__tool, for clients that reject dots)", names, NamesQualified, NamesLLM)
}

// Server is one MCP server on a Backend. Many clients may connect to it
// at once (MCP()'s Connect or a streamable HTTP handler); Run keeps what it
// serves in step with the session.
type Server struct {
	b     Backend
	opts  Options
	log   *zap.Logger
	srv   *mcp.Server
	ready chan struct{}
	once  sync.Once
	last  atomic.Pointer[mcp.ServerSession] // the client that spoke last
	// own is the client's filter (Options.Tools, Options.ReadOnly);
	// exposure is it with the session's default, as of the last Sync.
	own      Exposure
	exposure atomic.Pointer[Exposure]

	// catMu guards catalog and index: in discovery mode, the tools
	// call_tool may call by served name, and their search index (nil
	// until a search needs it).
	catMu   sync.Mutex
	catalog map[string]wantTool
	served  map[toolKey]string // catalog's names by node and tool (discover.go)
	index   *toolsearch.Index

	// live, if set, knows which clients can be sent a request (the HTTP
	// endpoint's: those with a stream open); set before Run.
	live liveness
	// via is how clients come, for the call log: "http" (the endpoint) or
	// "" (stdio); set before Run.
	via string

	// updates queues resources/updated news for the clients (attachment).
	updates *sendq.Queue[string]

	// inflightMu guards inflight: the client of each tool call running,
	// in the order they started (relay.go).
	inflightMu sync.Mutex
	inflight   []asker

	// pending holds the calls of 2026-07-28 clients between rounds
	// (mrtr.go).
	pending pendingCalls

	// syncMu serialises Sync and guards the fields below: what is served
	// now, by served name (tools, prompts) or URI (resources, templates).
	syncMu    sync.Mutex
	tools     map[string]served
	resources map[string]served
	templates map[string]served
	prompts   map[string]served
}

// served is one item registered with the SDK server: the node behind it,
// its node-local name, and a fingerprint to notice a changed definition.
type served struct {
	node, name string
	fp         string
}

// New returns a server on b. Call Run to serve anything.
func New(b Backend, opts *Options) *Server {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Names == "" {
		o.Names = NamesQualified
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{
		b: b, opts: o, log: log, ready: make(chan struct{}),
		tools: map[string]served{}, resources: map[string]served{},
		templates: map[string]served{}, prompts: map[string]served{},
	}
	if f, err := ParseFilter(o.Tools); err != nil {
		// Callers validate; a filter that cannot be read exposes nothing.
		log.Error("the client's tool filter is malformed: no tool is exposed", zap.Error(err))
		s.own = Exposure{{src: o.Tools, include: []string{"\x00"}}}
	} else if !f.IsZero() {
		s.own = Exposure{f}
	}
	if o.ReadOnly {
		s.own = append(s.own, ReadOnlyFilter())
	}
	s.srv = mcp.NewServer(s.implementation(), s.serverOptions())
	// A client's trace goes on through telemetry's middleware.
	s.srv.AddReceivingMiddleware(telemetry.ServerMiddleware, s.middleware)
	s.addTasks() // tasks.go
	s.updates = sendq.New(64<<10, s.sendUpdates)
	return s
}

// MCP returns the SDK server, to Connect clients to or to hand to
// mcp.NewStreamableHTTPHandler.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Ready is closed once the first Sync of Run is done: a client connected
// before then could see an empty tool list.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run keeps the served tools, resources and prompts in step with the
// session until ctx ends; the SDK tells connected clients of every change
// (notifications/tools/list_changed and friends). In node mode it also
// attaches to the node, so its sampling and elicitation requests and
// resource updates reach the client. Cancelling ctx is the only way to stop
// it and is not an error.
func (s *Server) Run(ctx context.Context) error {
	defer s.once.Do(func() { close(s.ready) })
	defer s.pending.stop() // the calls of its 2026-07-28 clients (mrtr.go)
	w, err := s.b.Watch(ctx)
	if err != nil {
		return fmt.Errorf("watching the session: %w", err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a, ok := s.b.(Attacher); ok && s.opts.Node != "" {
		wg.Go(func() {
			if err := a.Attach(ctx, s.opts.Node, attachment{s}); err != nil && ctx.Err() == nil {
				s.log.Warn("attaching to the node: sampling and elicitation will be declined", zap.Error(err))
			}
		})
	}
	s.Sync(ctx)
	s.once.Do(func() { close(s.ready) })
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching the session: %w", err)
		}
		if s.relevant(ev) {
			s.Sync(ctx)
		}
	}
}

// relevant says whether ev may change what is served. A node going
// between READY and BUSY (every call) does not.
func (s *Server) relevant(ev session.Event) bool {
	if s.opts.Node != "" && ev.Node != s.opts.Node && ev.Kind != session.EventSettings {
		return false
	}
	switch ev.Kind {
	case session.EventNodeAdded, session.EventNodeRemoved, session.EventTools, session.EventSettings:
		return true
	case session.EventState:
		// A node's tools stay served whatever its state (issue 27): only
		// a start that ended may bring a list that differs from what was
		// known (a first start, a stale catalogue).
		return ev.To == node.Ready.String()
	}
	return false
}

// Sync makes what is served match the session now. Errors are logged: a
// node that cannot be listed is left out until the next change.
func (s *Server) Sync(ctx context.Context) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	exp := s.currentExposure(ctx)
	s.exposure.Store(&exp)
	want, err := s.wantedTools(ctx, exp)
	if err != nil {
		s.log.Warn("listing the session's tools", zap.Error(err))
		return
	}
	if s.opts.Discover {
		s.setCatalog(want)
		want = s.discoveryTools(exp)
	}
	if s.opts.Code {
		want = s.codeTools(ctx, exp, want)
	}
	if s.opts.Manage {
		maps.Copy(want, s.manageTools(exp))
	}
	s.applyTools(want)
	s.syncFeatures(ctx)
}

// currentExposure is the client's filter and the session's default now. A
// default that cannot be read or parsed exposes nothing: hiding a tool
// by mistake is safer than showing one.
func (s *Server) currentExposure(ctx context.Context) Exposure {
	exp := slices.Clone(s.own)
	globs, err := s.b.Expose(ctx)
	if err == nil {
		var f Filter
		if f, err = ParseFilter(globs); err == nil {
			if !f.IsZero() {
				exp = append(exp, f)
			}
			return exp
		}
	}
	s.log.Error("the session's expose setting cannot be read: no tool is exposed until it is fixed (`nerve session set expose GLOBS`)", zap.Error(err))
	return append(exp, Filter{src: globs, include: []string{"\x00"}})
}

// exposed reports whether the tool t of node id passes the exposure of
// the last Sync.
func (s *Server) exposed(id string, t *mcp.Tool) bool {
	e := s.exposure.Load()
	return e == nil || e.Allows(id, t)
}

// middleware passes on what the SDK would answer by itself: the client's
// logging/setLevel to the servers behind the nodes (they send nothing
// until told a level), and, in node mode, reads of resources the server
// behind did not list (a proxy must not narrow what its server accepts).
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			// The chain of calls this one is part of, when nerve (an mcp
			// node) sends it: nesting is bounded across nerve's hops.
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				var err error
				if ctx, err = node.WithCallChain(ctx, node.ChainFromMeta(p.GetMeta())); err != nil {
					return nil, err
				}
			}
			if res, ok, err := s.callAsTask(ctx, req, next); ok { // tasks.go
				return res, err
			}
		case "logging/setLevel":
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				s.setLevel(ctx, string(p.Level))
			}
		case "resources/read":
			if s.opts.Node == "" {
				break
			}
			if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && p != nil && !s.listed(p.URI) {
				f, err := s.b.RunningMCPNode(ctx, s.opts.Node)
				if err != nil {
					return nil, err
				}
				res, err := f.ReadResource(ctx, p.URI)
				return res, withData(err) // modern.go
			}
		}
		return next(ctx, method, req)
	}
}
