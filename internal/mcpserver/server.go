package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

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

// maxProtocol is the newest protocol version the server speaks.
const maxProtocol = "2025-11-25"

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

	// inflightMu guards inflight: the client of each tool call running,
	// in the order they started.
	inflightMu sync.Mutex
	inflight   []*mcp.ServerSession

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
	s.srv.AddReceivingMiddleware(s.middleware)
	return s
}

// SessionTitle starts the title a session's MCP server gives in its
// serverInfo ("nerve session default"): with the name "nerve" it tells an
// MCP client that the server is a nerve session, so a session's mcp node
// can refuse to contain one (internal/nodes/mcpnode checks the same words).
const SessionTitle = "nerve session"

func (s *Server) implementation() *mcp.Implementation {
	v := s.opts.Version
	if v == "" {
		v = "dev"
	}
	if s.opts.Node != "" {
		return &mcp.Implementation{Name: "nerve/" + s.opts.Node, Version: v}
	}
	title := SessionTitle
	if b, ok := s.b.(interface{ SessionName() string }); ok {
		title += " " + b.SessionName()
	}
	return &mcp.Implementation{Name: "nerve", Title: title, Version: v}
}

func (s *Server) serverOptions() *mcp.ServerOptions {
	caps := &mcp.ServerCapabilities{
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Logging:     &mcp.LoggingCapabilities{},
		Completions: &mcp.CompletionCapabilities{},
	}
	o := &mcp.ServerOptions{
		Capabilities:       caps,
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { s.last.Store(req.Session) },
		// The draft protocol 2026-07-28 forbids requests to the client while
		// serving one (SEP-2322 wants them returned as input requests), but
		// a node's server asks for sampling or elicitation in the middle of
		// a call: offer the versions up to 2025-11-25, which every client
		// speaks today.
		SupportedProtocolVersions: slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v > maxProtocol }),
	}
	if s.opts.Node == "" {
		o.Instructions = "The tools of a nerve session: each is named node.tool after the node (a bash shell, an MCP server, Claude Code, an agent) that provides it."
		if s.opts.Discover {
			o.Instructions += " They are not listed: find them with search_tools (a query in words), then call one with call_tool."
		}
		if s.opts.Manage {
			o.Instructions += " list_nodes shows the nodes and why one failed; restart_node brings one back."
		}
		return o
	}
	// Node mode mirrors the server behind the node when it is known now.
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	mn, err := s.b.MCPNode(ctx, s.opts.Node)
	if err != nil {
		if errors.Is(err, ErrNoFeatures) {
			caps.Resources, caps.Prompts, caps.Completions = nil, nil, nil
		}
		return o
	}
	f := FeaturesOf(mn)
	o.Instructions = f.Instructions
	if c := f.Capabilities; c != nil {
		if c.Resources == nil {
			caps.Resources = nil
		} else {
			caps.Resources.Subscribe = c.Resources.Subscribe
		}
		if c.Prompts == nil {
			caps.Prompts = nil
		}
		if c.Completions == nil {
			caps.Completions = nil
		}
		caps.Experimental = c.Experimental
	}
	return o
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
		return callable(ev.From) != callable(ev.To)
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

// wantTool is a tool to serve under name: a node's, or one of the
// server's own (handler set).
type wantTool struct {
	node    string
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

func (s *Server) wantedTools(ctx context.Context, exp Exposure) (map[string]wantTool, error) {
	want := map[string]wantTool{}
	if id := s.opts.Node; id != "" {
		if !s.nodeUp(ctx, id) {
			return want, nil
		}
		tools, err := s.b.Tools(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if exp.Allows(id, t) {
				want[t.Name] = wantTool{node: id, tool: t}
			}
		}
		return want, nil
	}
	entries, err := s.b.Toolset(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !exp.Allows(e.Node, e.Tool) {
			continue
		}
		name := e.Qualified
		if s.opts.Names == NamesLLM {
			name = e.LLMName
		}
		want[name] = wantTool{node: e.Node, tool: e.Tool}
	}
	return want, nil
}

// nodeUp reports whether node id exists and can take calls.
func (s *Server) nodeUp(ctx context.Context, id string) bool {
	infos, err := s.b.Nodes(ctx)
	if err != nil {
		s.log.Warn("listing nodes", zap.Error(err))
		return false
	}
	for _, in := range infos {
		if in.ID == id {
			// A lazy node knows its tools (catalogue); its first call
			// starts it.
			lazy, _ := in.Details["lazy"].(bool)
			return in.State == node.Ready || in.State == node.Busy || lazy
		}
	}
	return false
}

func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%p", v)
	}
	return string(b)
}

func (s *Server) applyTools(want map[string]wantTool) {
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.tools, name)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names) // clients see a stable order
	for _, name := range names {
		w := want[name]
		fp := w.node + "\x00" + fingerprint(w.tool)
		if cur, ok := s.tools[name]; ok && cur.fp == fp {
			continue
		}
		t := *w.tool
		t.Name = name
		t.InputSchema = objectSchema(t.InputSchema)
		h := w.handler
		if h == nil {
			h = s.toolHandler(w.node, w.tool)
		}
		if err := s.addTool(&t, h); err != nil {
			s.log.Warn("a tool cannot be served", zap.String("node", w.node), zap.String("tool", w.tool.Name), zap.Error(err))
			continue
		}
		s.tools[name] = served{node: w.node, name: w.tool.Name, fp: fp}
	}
}

// addTool adds t, turning the SDK's panics on a malformed tool (from a
// misbehaving server behind a node) into an error.
func (s *Server) addTool(t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.srv.AddTool(t, h)
	return nil
}

// objectSchema returns schema if it is a JSON object schema, else the
// schema of any object: the SDK (and the spec) require type "object".
func objectSchema(schema any) any {
	if schema != nil {
		var m map[string]any
		if b, err := json.Marshal(schema); err == nil && json.Unmarshal(b, &m) == nil && m["type"] == "object" {
			return schema
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// toolHandler calls t on node id, passing progress, log messages and
// streamed text to the client and the client's cancellation to the node.
func (s *Server) toolHandler(id string, t *mcp.Tool) mcp.ToolHandler {
	tool := t.Name
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !s.exposed(id, t) {
			// Hidden since it was listed (the session's expose setting
			// changed): as unknown as a tool never listed.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", req.Params.Name)}
		}
		ss := req.Session
		s.last.Store(ss)
		if s.opts.Node != "" {
			defer s.callStarted(ss)()
		} else if p := ss.InitializeParams(); p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil {
			// Session-wide: what the called node asks of a person during
			// this call (a graph's ask step) goes to this client.
			if ca, ok := s.b.(CallAttacher); ok {
				defer s.callStarted(ss)()
				if detach, err := ca.AttachFor(ctx, id, attachment{s}); err == nil {
					defer detach()
				}
			}
		}
		tok := req.Params.GetProgressToken()
		var mu sync.Mutex // observers may run on any goroutine; keep notices in order
		var seq float64
		observe := func(ev node.CallEvent) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Kind {
			case node.EventProgress:
				if tok != nil {
					_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: ev.Progress, Total: ev.Total, Message: ev.Message})
				}
			case node.EventText:
				if tok != nil {
					seq++
					_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: seq, Message: ev.Text})
				}
			case node.EventStep:
				// A graph's steps (and an agent's tool uses) are progress:
				// a caller that gave a token sees the call is alive, and a
				// client that resets its timeout on progress (the
				// TypeScript SDK's resetTimeoutOnProgress) keeps waiting.
				if tok != nil {
					seq++
					_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: seq, Message: stepMessage(ev)})
				}
			case node.EventLog:
				var data any = ev.Text
				if len(ev.Data) > 0 {
					data = ev.Data
				}
				_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(ev.Level), Logger: ev.Logger, Data: data})
			}
		}
		var args json.RawMessage
		var meta map[string]any
		if req.Params != nil {
			args = req.Params.Arguments
			meta = req.Params.Meta
		}
		res, err := s.b.Call(node.WithCaller(ctx, s.caller(ss)), id, tool, args, meta, observe)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The call could not be made (node not ready, bad arguments,
			// connection lost): the model reads why and may try again.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{}}
		}
		return res, nil
	}
}

// syncFeatures serves the resources, templates and prompts of mcp nodes.
func (s *Server) syncFeatures(ctx context.Context) {
	var ids []string
	if id := s.opts.Node; id != "" {
		if s.nodeUp(ctx, id) {
			ids = []string{id}
		}
	} else {
		infos, err := s.b.Nodes(ctx)
		if err != nil {
			s.log.Warn("listing nodes", zap.Error(err))
			return
		}
		for _, in := range infos {
			if in.State == node.Ready || in.State == node.Busy {
				ids = append(ids, in.ID)
			}
		}
	}
	res, tmpl, prompts := map[string]served{}, map[string]served{}, map[string]served{}
	resDefs := map[string]*mcp.Resource{}
	tmplDefs := map[string]*mcp.ResourceTemplate{}
	promptDefs := map[string]*mcp.Prompt{}
	for _, id := range ids {
		mn, err := s.b.MCPNode(ctx, id)
		if err != nil {
			if !errors.Is(err, ErrNoFeatures) && !errors.Is(err, node.ErrNotFound) {
				s.log.Debug("features of node", zap.String("node", id), zap.Error(err))
			}
			continue
		}
		f := FeaturesOf(mn)
		// URIs are served as the servers give them; the first node to
		// offer a URI gets it.
		for _, r := range f.Resources {
			if _, dup := res[r.URI]; !dup && r.URI != "" {
				res[r.URI] = served{node: id, name: r.URI, fp: id + "\x00" + fingerprint(r)}
				resDefs[r.URI] = r
			}
		}
		for _, t := range f.Templates {
			if _, dup := tmpl[t.URITemplate]; !dup && t.URITemplate != "" {
				tmpl[t.URITemplate] = served{node: id, name: t.URITemplate, fp: id + "\x00" + fingerprint(t)}
				tmplDefs[t.URITemplate] = t
			}
		}
		for _, p := range f.Prompts {
			name := p.Name
			if s.opts.Node == "" {
				name = node.QualifiedName(id, p.Name)
				if s.opts.Names == NamesLLM {
					name = node.LLMName(id, p.Name)
				}
			}
			if _, dup := prompts[name]; !dup {
				prompts[name] = served{node: id, name: p.Name, fp: id + "\x00" + fingerprint(p)}
				promptDefs[name] = p
			}
		}
	}
	apply(s.resources, res, s.srv.RemoveResources, func(key string, sv served) error {
		return guard(func() { s.srv.AddResource(resDefs[key], s.resourceHandler(sv.node)) })
	}, s.log)
	apply(s.templates, tmpl, s.srv.RemoveResourceTemplates, func(key string, sv served) error {
		return guard(func() { s.srv.AddResourceTemplate(tmplDefs[key], s.resourceHandler(sv.node)) })
	}, s.log)
	apply(s.prompts, prompts, s.srv.RemovePrompts, func(key string, sv served) error {
		p := *promptDefs[key]
		p.Name = key
		return guard(func() { s.srv.AddPrompt(&p, s.promptHandler(sv.node, sv.name)) })
	}, s.log)
}

// apply moves cur to want: removes what is gone, adds what is new or
// changed.
func apply(cur, want map[string]served, remove func(...string), add func(string, served) error, log *zap.Logger) {
	var gone []string
	for k := range cur {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
		for _, k := range gone {
			delete(cur, k)
		}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sv := want[k]
		if c, ok := cur[k]; ok && c.fp == sv.fp {
			continue
		}
		if err := add(k, sv); err != nil {
			log.Warn("cannot serve", zap.String("node", sv.node), zap.String("item", k), zap.Error(err))
			continue
		}
		cur[k] = sv
	}
}

func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

func (s *Server) resourceHandler(id string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		s.last.Store(req.Session)
		f, err := s.b.RunningMCPNode(ctx, id)
		if err != nil {
			return nil, err
		}
		return f.ReadResource(ctx, req.Params.URI)
	}
}

func (s *Server) promptHandler(id, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		s.last.Store(req.Session)
		f, err := s.b.RunningMCPNode(ctx, id)
		if err != nil {
			return nil, err
		}
		return f.GetPrompt(ctx, name, req.Params.Arguments)
	}
}

// nodeOfURI finds the node serving uri: a listed resource, else a
// template that matches it; in node mode, the node.
func (s *Server) nodeOfURI(uri string) (string, bool) {
	if s.opts.Node != "" {
		return s.opts.Node, true
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if sv, ok := s.resources[uri]; ok {
		return sv.node, true
	}
	for t, sv := range s.templates {
		if templateMatches(t, uri) {
			return sv.node, true
		}
	}
	return "", false
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	if p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	ref := *p.Ref
	p.Ref = &ref
	var id string
	switch ref.Type {
	case "ref/prompt":
		if s.opts.Node != "" {
			id = s.opts.Node
			break
		}
		s.syncMu.Lock()
		sv, ok := s.prompts[ref.Name]
		s.syncMu.Unlock()
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		id, ref.Name = sv.node, sv.name
	case "ref/resource":
		var ok bool
		if id, ok = s.nodeOfURI(ref.URI); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no node serves %q", ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	f, err := s.b.RunningMCPNode(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := f.Complete(ctx, &p)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	id, ok := s.nodeOfURI(req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	f, err := s.b.RunningMCPNode(ctx, id)
	if err != nil {
		return err
	}
	return f.Subscribe(ctx, req.Params.URI)
}

func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	id, ok := s.nodeOfURI(req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	f, err := s.b.MCPNode(ctx, id)
	if err != nil {
		return err
	}
	return f.Unsubscribe(ctx, req.Params.URI)
}

// middleware passes on what the SDK would answer by itself: the client's
// logging/setLevel to the servers behind the nodes (they send nothing
// until told a level), and, in node mode, reads of resources the server
// behind did not list (a proxy must not narrow what its server accepts).
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			// A client that lists right after the daemon started gets
			// every server's tools, not only those already up: wait for
			// the servers that are starting, then serve what is there.
			// (Not before initialize: a server being started may be the
			// one asking.) Later ones come with list_changed.
			if w, ok := s.b.(interface{ WaitStarting(context.Context) }); ok && s.opts.Node == "" {
				if p, ok := req.GetParams().(*mcp.ListToolsParams); !ok || p == nil || p.Cursor == "" {
					w.WaitStarting(ctx)
					s.Sync(ctx)
				}
			}
		case "tools/call":
			// The chain of calls this one is part of, when nerve (an mcp
			// node) sends it: nesting is bounded across nerve's hops.
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				var err error
				if ctx, err = node.WithCallChain(ctx, node.ChainFromMeta(p.GetMeta())); err != nil {
					return nil, err
				}
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
				return f.ReadResource(ctx, p.URI)
			}
		}
		return next(ctx, method, req)
	}
}

// setLevel passes a log level to the node (node mode) or to every mcp
// node that is up; the Go SDK's servers send no log message before.
func (s *Server) setLevel(ctx context.Context, level string) {
	ids := []string{s.opts.Node}
	if s.opts.Node == "" {
		ids = ids[:0]
		infos, _ := s.b.Nodes(ctx)
		for _, in := range infos {
			if in.State == node.Ready || in.State == node.Busy {
				ids = append(ids, in.ID)
			}
		}
	}
	for _, id := range ids {
		// A level goes to nodes that are running: it starts no lazy node
		// (a client sets a level right after it connects).
		f, err := s.b.MCPNode(ctx, id)
		if err == nil {
			err = f.SetLoggingLevel(ctx, level)
		}
		if err != nil && !errors.Is(err, ErrNoFeatures) {
			s.log.Debug("passing logging/setLevel to a node", zap.String("node", id), zap.Error(err))
		}
	}
}

// listed reports whether uri is served as a resource or matches a template.
func (s *Server) listed(uri string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if _, ok := s.resources[uri]; ok {
		return true
	}
	for t := range s.templates {
		if templateMatches(t, uri) {
			return true
		}
	}
	return false
}

// client returns the MCP client to pass a node's request to: of the
// clients that can answer it (want reports the capability), the one whose
// tool call started last and is still running, else the one that spoke
// last, else any.
func (s *Server) client(want func(*mcp.ClientCapabilities) bool) *mcp.ServerSession {
	s.inflightMu.Lock()
	busy := slices.Clone(s.inflight)
	s.inflightMu.Unlock()
	can := func(ss *mcp.ServerSession) bool {
		p := ss.InitializeParams()
		return p != nil && p.Capabilities != nil && want(p.Capabilities) && (s.live == nil || s.live.reachable(ss.ID()))
	}
	var live []*mcp.ServerSession
	for ss := range s.srv.Sessions() {
		if can(ss) {
			live = append(live, ss)
		}
	}
	for i := len(busy) - 1; i >= 0; i-- {
		if slices.Contains(live, busy[i]) {
			return busy[i]
		}
	}
	if last := s.last.Load(); slices.Contains(live, last) {
		return last
	}
	if len(live) > 0 {
		return live[len(live)-1]
	}
	return nil
}

// callStarted records that ss has a tool call running; the returned
// function ends it.
func (s *Server) callStarted(ss *mcp.ServerSession) func() {
	s.inflightMu.Lock()
	s.inflight = append(s.inflight, ss)
	s.inflightMu.Unlock()
	return func() {
		s.inflightMu.Lock()
		defer s.inflightMu.Unlock()
		if i := slices.Index(s.inflight, ss); i >= 0 {
			s.inflight = slices.Delete(s.inflight, i, i+1)
		}
	}
}

// attachment passes a node's hook requests to the MCP client.
type attachment struct{ s *Server }

func (a attachment) Sample(ctx context.Context, nodeID string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ss := a.s.client(func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
	if ss == nil {
		return nil, session.ErrNoOneToAsk
	}
	ctx, gone := a.s.whileReachable(ctx, ss)
	defer gone()
	res, err := ss.CreateMessage(ctx, req)
	if err != nil && gone() {
		return nil, fmt.Errorf("%w (its MCP client went away)", session.ErrNoOneToAsk)
	}
	return res, err
}

func (a attachment) Elicit(ctx context.Context, nodeID string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ss := a.s.client(func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil })
	if ss == nil {
		return node.NoOneDeclined(), nil
	}
	ctx, gone := a.s.whileReachable(ctx, ss)
	defer gone()
	res, err := ss.Elicit(ctx, req)
	if err != nil && gone() {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return res, err
}

// available says whether any client of the server can be sent a request.
func (a attachment) available() bool {
	if a.s.live == nil {
		return true
	}
	for ss := range a.s.srv.Sessions() {
		if a.s.live.reachable(ss.ID()) {
			return true
		}
	}
	return false
}

// caller is ss's client as the call log names it: its initialize
// clientInfo name and how it came.
func (s *Server) caller(ss *mcp.ServerSession) node.Caller {
	c := node.Caller{Kind: node.CallerMCP, Via: cmp.Or(s.via, "stdio")}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			c.Name = p.ClientInfo.Name
		}
	}
	return c
}

// liveness knows which clients can be sent a request (http_sessions.go).
type liveness interface {
	reachable(id string) bool
	unreachable(id string) (<-chan struct{}, func())
}

// whileReachable returns ctx cancelled when ss's client can no longer be
// reached (its stream ended while the request waited for an answer), and
// a function that ends the watch and says whether that happened.
func (s *Server) whileReachable(ctx context.Context, ss *mcp.ServerSession) (context.Context, func() bool) {
	if s.live == nil {
		return ctx, func() bool { return false }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	errGone := errors.New("the MCP client went away")
	unreachable, unwatch := s.live.unreachable(ss.ID())
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case <-unreachable:
			cancel(errGone)
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, func() bool {
		once.Do(func() { close(stop); unwatch() })
		gone := errors.Is(context.Cause(ctx), errGone)
		cancel(nil)
		return gone
	}
}

func (a attachment) ResourceUpdated(uri string) {
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	_ = a.s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// stepMessage is a step event as one line: "step read finished (12ms)",
// "step review failed: …", or the step's name.
func stepMessage(ev node.CallEvent) string {
	var d struct {
		Step   string  `json:"step"`
		State  string  `json:"state"`
		Millis float64 `json:"ms"`
		Error  string  `json:"error"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.Step == "" || d.State == "" {
		return ev.Step
	}
	msg := "step " + d.Step + " " + d.State
	if d.Millis > 0 {
		msg += fmt.Sprintf(" (%.0fms)", d.Millis)
	}
	if d.Error != "" {
		msg += ": " + d.Error
	}
	return msg
}
