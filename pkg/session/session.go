package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/argcheck"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Errors callers test with errors.Is.
var (
	ErrExists = errors.New("node already exists")
	ErrClosed = errors.New("session is closed")
	// ErrChanged: a node's spec is not the one the caller read (its
	// SpecTag differs), so a change made from the old one would undo
	// someone else's (ReplaceIf).
	ErrChanged = errors.New("changed by someone else since it was read")
)

// Options configure a Session. Nil means defaults.
type Options struct {
	// Logger receives the session's logs; nil discards them.
	Logger *zap.Logger
	// Dir is the session's folder; each node gets Dir/nodes/<id>.
	Dir string
	// Save, if set, is called with every spec after each change to the set
	// of nodes or to a node's saved state. Calls are serialised.
	Save func(specs []node.Spec) error
	// ExtraEnv, if set, returns variables that rank between a client's
	// environment and the daemon's when a node resolves ${VAR} (the
	// private env file), with a name for messages; "" leaves them out.
	ExtraEnv func() (env []string, name string)
	// OnCall, if set, is told of every call made through Call or CallTool
	// once it ends (calllog.go).
	OnCall func(ctx context.Context, c *CallInfo)
	// OnState, if set, is told of every move of a node's state, on the
	// node's goroutine: it must be quick (the daemon's metrics count
	// starts). Unlike a subscription, it costs a call nothing.
	OnState func(id string, from, to node.State)
	// MCPEndpoint, if set, is every node's node.Env.MCPEndpoint: the
	// session's own MCP endpoint.
	MCPEndpoint func() (url, token string, ok bool)
	// Secret, if set, answers a node's ${keychain:NAME} (vars.go): the
	// value of secret name, never saved, logged or shown.
	Secret func(name string) (value string, ok bool)
}

// Session owns a set of nodes. It is safe for concurrent use.
type Session struct {
	name     string
	registry *Registry
	log      *zap.Logger
	dir      string
	save     func([]node.Spec) error
	hub      hub
	hooks    hooksProxy
	callSeq  atomic.Uint64
	closed   atomic.Bool
	saveMu   sync.Mutex // serialises Save calls
	// startsMu guards starts and startsDone: the starts requests
	// launched (launchStart), which Close waits for.
	startsMu   sync.Mutex
	starts     sync.WaitGroup
	startsDone bool
	// toolsets is the cached Toolset (nil: none); toolsetGen counts the
	// changes that drop it, so a listing made across a change is not kept.
	toolsets   atomic.Pointer[node.Toolset]
	toolsetGen atomic.Uint64
	extraEnv   func() ([]string, string)
	secret     func(string) (string, bool)
	onCall     func(context.Context, *CallInfo)
	onState    func(id string, from, to node.State)
	endpoint   func() (url, token string, ok bool)

	settingsMu sync.Mutex
	settings   Settings
	policy     policyState // policy.go

	search searcher // search.go

	// mu guards the fields below.
	mu    sync.RWMutex
	order []string
	nodes map[string]*entry
}

// entry is one node and what the session caches about it.
type entry struct {
	n    node.Node
	spec node.Spec // guarded by Session.mu

	// toolsMu guards the cached tool list and known.
	toolsMu sync.Mutex
	tools   []*mcp.Tool
	byName  map[string]*cachedTool
	valid   bool
	// known is the list the node gave last, before overrides, in whatever
	// state (a running server's, its catalogue, a kind's fixed tools):
	// what a listing shows while the node cannot list (starting, in
	// ERROR). A node's tools stay listed while it starts, stops or
	// restarts (issue 27).
	known []*mcp.Tool

	client entryEnv // the environment of the client that added it

	// watch wakes requests waiting for the node's state to change.
	watch stateWatch
	// pending: the session is about to start the node (add, restore); a
	// request that finds it CREATED waits instead of failing.
	pending atomic.Bool
	// owed is the start the session owes a registered node (add,
	// restore), made once whoever asks for it: nil until startPending
	// claims it. gone: the node left the session (Replace, Remove), so
	// the owed start is not made, or is undone. Both guarded by startMu.
	owed *owedStart
	gone bool
	// startMu guards the start a request launched (launchStart) and the
	// owed start (startPending).
	startMu  sync.Mutex
	starting bool
	startErr error
	// stopped mirrors spec.Stopped: held stopped on purpose (stop.go).
	stopped atomic.Bool
}

// cachedTool is a tool of the cache and its input schema, read and
// resolved at the tool's first call and kept until the list changes.
type cachedTool struct {
	tool *mcp.Tool
	once sync.Once
	args *argcheck.Schema
	// view is how a call of an overridden tool is made (overrides.go);
	// nil for a tool without an override.
	view *toolView
}

// argSchema returns the tool's argcheck.Schema, reading it on first use; a
// schema the library cannot use is logged then, once per listing.
func (s *Session) argSchema(id string, t *cachedTool) *argcheck.Schema {
	t.once.Do(func() {
		t.args = argcheck.New(t.tool)
		if err := t.args.Unresolved(); err != nil {
			s.log.Warn("checking only the basic shape of a tool's arguments",
				zap.String("node", id), zap.String("tool", t.tool.Name), zap.Error(err))
		}
	})
	return t.args
}

// setPending marks whether the session is about to start e's node, and
// wakes the requests that wait on it.
func (e *entry) setPending(v bool) {
	e.pending.Store(v)
	e.watch.notify()
}

// New returns an empty session named name whose nodes are built by reg.
func New(name string, reg *Registry, opts *Options) *Session {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Session{
		name:     name,
		registry: reg,
		log:      log.With(zap.String("session", name)),
		dir:      opts.Dir,
		save:     opts.Save,
		extraEnv: opts.ExtraEnv,
		secret:   opts.Secret,
		onCall:   opts.OnCall,
		onState:  opts.OnState,
		endpoint: opts.MCPEndpoint,
		nodes:    make(map[string]*entry),
	}
}

// Name returns the session's name.
func (s *Session) Name() string { return s.name }

// Dir returns the session's folder ("" for a session kept in memory).
func (s *Session) Dir() string { return s.dir }

// Closed reports whether Close was called.
func (s *Session) Closed() bool { return s.closed.Load() }

// Registry returns the factory registry the session builds nodes with.
func (s *Session) Registry() *Registry { return s.registry }

// SetHooks sets who answers sampling and elicitation requests; nil declines.
func (s *Session) SetHooks(h node.Hooks) { s.hooks.set(h) }

// Subscribe returns a subscription to the session's events with room for
// buf events (0: a default).
func (s *Session) Subscribe(buf int) *Subscription { return s.hub.add(buf, nil) }

// SubscribeFiltered is Subscribe for only the events filter keeps. The
// filter runs on the publishing goroutine, so it must be quick and must not
// block; an event it drops wakes no one.
func (s *Session) SubscribeFiltered(buf int, filter func(*Event) bool) *Subscription {
	return s.hub.add(buf, filter)
}

// Add builds a node from spec, adds it and starts it. A node whose start
// fails stays in the session in ERROR (so its reason can be read and it can
// be restarted), and Add returns it together with the start error.
func (s *Session) Add(ctx context.Context, spec node.Spec) (node.Node, error) {
	e, err := s.register(spec, true)
	if err != nil {
		return nil, err
	}
	e.client.set(clientEnv(ctx))
	// A node held stopped is not started (stop.go); one that starts
	// lazily is, as it was added to be used.
	if err := s.startPending(ctx, e, false); err != nil {
		return e.n, fmt.Errorf("starting node %q: %w", spec.ID, err)
	}
	return e.n, nil
}

// Register builds a node from spec and adds it without starting it.
func (s *Session) Register(spec node.Spec) (node.Node, error) {
	e, err := s.register(spec, false)
	if err != nil {
		return nil, err
	}
	return e.n, nil
}

// RegisterToStart is Register for a node the caller starts next with
// StartRegistered (a daemon restoring its sessions in the background):
// until then a request that finds it CREATED waits for that start instead
// of failing.
func (s *Session) RegisterToStart(spec node.Spec) (node.Node, error) {
	e, err := s.register(spec, true)
	if err != nil {
		return nil, err
	}
	return e.n, nil
}

// StartRegistered starts a node added with RegisterToStart, or only ends
// its wait when it starts lazily (its first call starts it). If a Replace
// put another node in its place meanwhile, that node is started, once:
// of StartRegistered and the Replace, the second waits for the first's
// start and returns its error.
func (s *Session) StartRegistered(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	return s.startPending(ctx, e, true)
}

// owedStart is the start the session owes a registered node.
type owedStart struct {
	done chan struct{} // closed when it has ended
	err  error         // set before done is closed
}

// startPending starts the node of e, registered to start, and ends the
// wait of the requests that found it CREATED; with lazy, a node that
// starts lazily is left for its first call. The start is made once
// whoever asks: the id may have passed to a replacing node (Replace)
// between a caller's register and its StartRegistered by id, and Replace
// starts that node too; the second caller waits for the first's start
// and gets its error. A node that left the session (endPending) is not
// started, and one that left while it started is stopped again, without
// error: the caller's add happened, and someone replaced or removed it.
func (s *Session) startPending(ctx context.Context, e *entry, lazy bool) error {
	e.startMu.Lock()
	if o := e.owed; o != nil {
		e.startMu.Unlock()
		select {
		case <-o.done:
			return o.err
		case <-ctx.Done():
			return fmt.Errorf("waiting for node %q to start: %w", e.n.ID(), context.Cause(ctx))
		}
	}
	o := &owedStart{done: make(chan struct{})}
	e.owed = o
	gone := e.gone
	e.startMu.Unlock()
	defer e.setPending(false)
	defer close(o.done)
	if l, ok := e.n.(node.Lazy); gone || (lazy && ok && l.StartsLazily()) || e.stopped.Load() {
		return nil // not in the session, its first call starts it, or it is held stopped
	}
	o.err = e.n.Start(ctx)
	e.startMu.Lock()
	gone = e.gone
	e.startMu.Unlock()
	if gone {
		// Replaced or removed while it started, and their stop may have
		// come before the start began: no server runs outside the
		// session. How its start ended matters to no one now.
		_ = e.n.Stop(context.WithoutCancel(ctx))
		o.err = nil
	}
	return o.err
}

// endPending says e's node has left the session (Replace, Remove, before
// they stop it): a start owed to it is not made, and one under way is
// undone once it ends (startPending). It does not wait: the caller's
// stop ends a start under way.
func (e *entry) endPending() {
	e.startMu.Lock()
	e.gone = true
	if e.owed == nil {
		e.owed = &owedStart{done: make(chan struct{})}
		close(e.owed.done)
	}
	e.startMu.Unlock()
	e.setPending(false)
}

// register builds and adds a node; pending says the caller starts it
// right after (requests that find it CREATED wait for that start).
func (s *Session) register(spec node.Spec, pending bool) (*entry, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := node.ValidateID(spec.ID); err != nil {
		return nil, err
	}
	spec = spec.Clone()
	e := &entry{spec: spec}
	e.pending.Store(pending)
	e.stopped.Store(spec.Stopped)
	id := spec.ID
	env := s.nodeEnv(e, id)
	s.mu.Lock()
	if _, ok := s.nodes[id]; ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("node %q: %w (remove it first with `nerve node rm %s`, or pick another name)", id, ErrExists, id)
	}
	// Reserve the id while the factory runs.
	s.nodes[id] = e
	s.mu.Unlock()

	n, err := s.registry.Build(spec, env)
	s.mu.Lock()
	if err != nil {
		delete(s.nodes, id)
		s.mu.Unlock()
		return nil, err
	}
	e.n = n
	s.order = append(s.order, id)
	s.mu.Unlock()
	e.prime()
	s.dropToolset()
	s.hub.publish(Event{Kind: EventNodeAdded, Node: id, NodeKind: spec.Kind})
	if err := s.persist(); err != nil {
		s.log.Error("saving specs", zap.Error(err))
	}
	return e, nil
}

// nodeEnv is what the session gives node id of entry e.
func (s *Session) nodeEnv(e *entry, id string) node.Env {
	env := node.Env{
		Session: s.name,
		Logger:  s.log.With(zap.String("node", id)),
		OnState: func(from, to node.State, reason string) {
			// READY after BUSY is the end of a call: the tools are the same.
			if (to == node.Ready && from != node.Busy) || to == node.Stopped || to == node.Error {
				s.invalidateTools(e)
			}
			if from != node.Busy || to != node.Ready {
				e.watch.notify()
			}
			s.hub.publish(stateEvent(id, from, to, reason))
			if s.onState != nil {
				s.onState(id, from, to)
			}
		},
		OnToolsChanged: func() {
			s.invalidateTools(e)
			s.hub.publish(Event{Kind: EventTools, Node: id})
		},
		SaveState: func(state json.RawMessage) error { return s.saveState(id, state) },
		Hooks:     &s.hooks,
		Tools:     s,
		Idle:      s.idle,

		MCPEndpoint: s.endpoint,
	}
	env.Vars = &vars{s: s, e: e, id: id}
	if s.dir != "" {
		env.Dir = filepath.Join(s.dir, "nodes", id)
	}
	return env
}

// Restore registers every spec and starts all the nodes in parallel. A node
// that fails to build is reported in the returned error and skipped; a node
// that fails to start stays in ERROR. It returns when every start is done.
func (s *Session) Restore(ctx context.Context, specs []node.Spec) error {
	var errs []error
	var started []*entry
	for _, spec := range specs {
		e, err := s.register(spec, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if spec.Stopped {
			_ = s.startPending(ctx, e, true) // starts nothing: ends the wait
			continue                         // held stopped (stop.go)
		}
		if l, ok := e.n.(node.Lazy); ok && l.StartsLazily() {
			_ = s.startPending(ctx, e, true) // it knows its tools; its first call starts it
			continue
		}
		started = append(started, e)
	}
	var wg sync.WaitGroup
	for _, e := range started {
		wg.Go(func() {
			if err := s.startPending(ctx, e, true); err != nil {
				s.log.Warn("node did not come back", zap.String("node", e.n.ID()), zap.Error(err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Remove stops a node and removes it.
func (s *Session) Remove(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	e.endPending() // a start owed to it (an add under way) never comes after its stop
	stopErr := e.n.Stop(ctx)
	s.mu.Lock()
	delete(s.nodes, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.dropToolset()
	s.hub.publish(Event{Kind: EventNodeRemoved, Node: id})
	if err := s.persist(); err != nil {
		s.log.Error("saving specs", zap.Error(err))
	}
	if stopErr != nil {
		return fmt.Errorf("stopping node %q: %w", id, stopErr)
	}
	return nil
}

// Restart stops a node (from any state, ERROR included) and starts it again.
func (s *Session) Restart(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	if _, ok := e.n.(*heldNode); ok {
		return s.rebuild(ctx, e)
	}
	e.client.set(clientEnv(ctx))
	if err := e.n.Stop(ctx); err != nil {
		return fmt.Errorf("stopping node %q: %w", id, err)
	}
	s.setStopped(e, false) // a restart is also a start (stop.go)
	if err := e.n.Start(ctx); err != nil {
		return fmt.Errorf("starting node %q: %w", id, err)
	}
	return nil
}

// Sync refreshes node id's catalogue (node.Syncer): a node that was not
// running is started for it and stopped again.
func (s *Session) Sync(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	sy, ok := e.n.(node.Syncer)
	if !ok {
		return fmt.Errorf("node %q is a %s node: only mcp nodes keep a tool catalogue to sync: %w", id, e.spec.Kind, ErrUnsupported)
	}
	return sy.Sync(ctx)
}

// Interrupt cancels what node id has in flight.
func (s *Session) Interrupt(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	return e.n.Interrupt(ctx)
}

// Node returns node id.
func (s *Session) Node(id string) (node.Node, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	return e.n, nil
}

// Nodes returns the nodes in the order they were added.
func (s *Session) Nodes() []node.Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]node.Node, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.nodes[id].n)
	}
	return out
}

// Specs returns a copy of every node's spec, in the order they were added.
func (s *Session) Specs() []node.Spec {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.specsLocked()
}

func (s *Session) specsLocked() []node.Spec {
	syncs.AssertRLocked(&s.mu)
	out := make([]node.Spec, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.nodes[id].spec.Clone())
	}
	return out
}

// Spec returns a copy of node id's spec.
func (s *Session) Spec(id string) (node.Spec, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.nodes[id]
	if !ok || e.n == nil {
		return node.Spec{}, s.notFoundLocked(id)
	}
	return e.spec.Clone(), nil
}

// Info returns node id's Info with its tool count filled from the cache.
func (s *Session) Info(id string) (node.Info, error) {
	e, err := s.entry(id)
	if err != nil {
		return node.Info{}, err
	}
	return s.info(e), nil
}

func (s *Session) info(e *entry) node.Info {
	info := e.n.Info()
	if e.stopped.Load() {
		if info.State == node.Created {
			info.State = node.Stopped // restored held stopped: never started
		}
		// Stopped on purpose: a call does not start it (await), whatever
		// the node says of its catalogue (issue 27: node ls said "starts
		// on its first call").
		if _, ok := info.Details["lazy"]; ok {
			info.Details = maps.Clone(info.Details)
			delete(info.Details, "lazy")
		}
	}
	e.toolsMu.Lock()
	if e.valid {
		info.Tools = len(e.tools)
	}
	e.toolsMu.Unlock()
	return info
}

// Infos returns the Info of every node, in the order they were added.
func (s *Session) Infos() []node.Info {
	s.mu.RLock()
	entries := make([]*entry, 0, len(s.order))
	for _, id := range s.order {
		entries = append(entries, s.nodes[id])
	}
	s.mu.RUnlock()
	out := make([]node.Info, len(entries))
	for i, e := range entries {
		out[i] = s.info(e)
	}
	return out
}

// Tools returns node id's tools from the cache, listing them when the cache
// is empty (after a start or a list-changed notice).
func (s *Session) Tools(ctx context.Context, id string) ([]*mcp.Tool, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	tools, _, err := s.settledTools(ctx, e)
	return tools, err
}

// Tool returns one tool of node id.
func (s *Session) Tool(ctx context.Context, id, tool string) (*mcp.Tool, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	t, err := s.tool(ctx, e, tool)
	if err != nil {
		return nil, err
	}
	return t.tool, nil
}

func (s *Session) tool(ctx context.Context, e *entry, tool string) (*cachedTool, error) {
	tools, byName, err := s.settledTools(ctx, e)
	t, ok := byName[tool]
	if err == nil && !ok && catalogued(e.n) && !e.stopped.Load() {
		// The catalogue may be stale: start the node and ask its live
		// list (the call would start it anyway).
		if serr := s.await(ctx, e, true); serr == nil {
			s.invalidateTools(e)
			tools, byName, err = s.tools(ctx, e)
			t, ok = byName[tool]
		}
	}
	if err != nil || !ok {
		// A node that cannot take calls has no tools to speak of: say
		// so, not that the tool is unknown.
		if st := e.n.State(); st != node.Ready && st != node.Busy && !catalogued(e.n) {
			return nil, node.NotReady(e.n.ID(), st, e.n.Info().Error)
		}
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		return nil, &UnknownToolError{Node: e.n.ID(), Tool: tool, Known: names}
	}
	return t, nil
}

// settledTools lists e's tools once the node is settled: a node that is
// starting or stopping is waited for; a lazy one is not started, its
// catalogue knows its tools. Another request may start (or stop) the node
// between the wait and the listing, which a node in the middle of a start
// refuses: then it waits for that start, as the waiting rule says, and
// lists again. Each round needs a change of state, and await ends on a
// start that fails.
func (s *Session) settledTools(ctx context.Context, e *entry) ([]*mcp.Tool, map[string]*cachedTool, error) {
	for {
		if err := s.await(ctx, e, false); err != nil {
			return nil, nil, err
		}
		tools, byName, err := s.tools(ctx, e)
		if err == nil || !errors.Is(err, node.ErrNotReady) {
			return tools, byName, err
		}
		if st := e.n.State(); st != node.Starting && st != node.Stopping {
			return tools, byName, err
		}
	}
}

func (s *Session) tools(ctx context.Context, e *entry) ([]*mcp.Tool, map[string]*cachedTool, error) {
	ovs := s.overridesOf(e) // before toolsMu: never s.mu under it
	e.toolsMu.Lock()
	defer e.toolsMu.Unlock()
	if e.valid {
		return e.tools, e.byName, nil
	}
	raw, err := e.n.ListTools(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing tools of node %q: %w", e.n.ID(), err)
	}
	tools, byName := s.view(e.n.ID(), raw, ovs) // overrides.go
	e.known = raw
	// Only a listing from a node that can serve calls is worth keeping.
	if st := e.n.State(); st == node.Ready || st == node.Busy {
		e.tools, e.byName, e.valid = tools, byName, true
	}
	return tools, byName, nil
}

// prime notes what e's node knows of its tools before it starts (a
// catalogue, a kind's fixed tools), so that a listing shows them while
// the node starts. Listing a node that is not running does no I/O.
func (e *entry) prime() {
	tools, err := e.n.ListTools(context.Background())
	if err != nil {
		return
	}
	e.toolsMu.Lock()
	if e.known == nil {
		e.known = tools
	}
	e.toolsMu.Unlock()
}

// listed is e's tools as a session-wide listing shows them: what the node
// lists now or, while it cannot (starting, stopping, in ERROR), what it
// listed last. It never waits. The error is the node's when it never
// listed any tools.
func (s *Session) listed(ctx context.Context, e *entry) ([]*mcp.Tool, error) {
	tools, _, err := s.tools(ctx, e)
	if err == nil {
		return tools, nil
	}
	ovs := s.overridesOf(e) // before toolsMu: never s.mu under it
	e.toolsMu.Lock()
	raw := e.known
	e.toolsMu.Unlock()
	if raw == nil {
		return nil, err
	}
	tools, _ = s.view(e.n.ID(), raw, ovs)
	return tools, nil
}

func (s *Session) invalidateTools(e *entry) {
	e.toolsMu.Lock()
	e.tools, e.byName, e.valid = nil, nil, false
	e.toolsMu.Unlock()
	s.dropToolset()
}

// Toolset returns the tools of every node, whatever its state, under
// qualified and LLM-safe names: tools listed once stay listed while their
// node starts, stops, restarts or is in ERROR, and a call to one that
// cannot run now says why and what starts it (the waiting rule, ready.go).
// It never waits for a node: one that is starting is listed from what it
// listed last (its catalogue), and one that never listed tools comes with
// the change of the tool list when it is up. It is cached until a node or
// a tool list changes.
func (s *Session) Toolset(ctx context.Context) *node.Toolset {
	if ts := s.toolsets.Load(); ts != nil {
		return ts
	}
	s.mu.RLock()
	entries := make([]*entry, 0, len(s.order))
	for _, id := range s.order {
		entries = append(entries, s.nodes[id])
	}
	s.mu.RUnlock()
	gen := s.toolsetGen.Load()
	var all []node.NodeTools
	complete := true
	for _, e := range entries {
		tools, err := s.listed(ctx, e)
		if err != nil {
			// It never listed tools: none to show until it does, which
			// comes as a change of state (READY) or of its tools. Only a
			// running node that fails to list is worth asking again.
			if st := e.n.State(); st == node.Ready || st == node.Busy {
				complete = false
				s.log.Warn("listing tools", zap.String("node", e.n.ID()), zap.Error(err))
			}
			continue
		}
		all = append(all, node.NodeTools{Node: e.n.ID(), Tools: tools})
	}
	ts := node.NewToolset(all)
	if complete && s.toolsets.CompareAndSwap(nil, ts) && s.toolsetGen.Load() != gen {
		// Something changed while this was listed: do not keep it.
		s.toolsets.CompareAndSwap(ts, nil)
	}
	return ts
}

// dropToolset forgets the cached Toolset after a change of a node or of
// its tools.
func (s *Session) dropToolset() {
	s.toolsetGen.Add(1)
	s.toolsets.Store(nil)
}

// liveUnknown turns a node's "no such tool" — a tool its stale catalogue
// listed but its running server no longer has — into the session's
// unknown-tool error, with did-you-mean against the live list.
func (s *Session) liveUnknown(ctx context.Context, e *entry, tool string, err error) error {
	if !errors.Is(err, node.ErrUnknownTool) {
		return err
	}
	s.invalidateTools(e)
	if _, terr := s.tool(ctx, e, tool); terr != nil {
		return terr
	}
	return err
}

// catalogued reports whether n is a node that is not running but knows its
// tools (node.Lazy): its tools are listed and its first call starts it.
func catalogued(n node.Node) bool {
	l, ok := n.(node.Lazy)
	if !ok || !l.Catalogued() {
		return false
	}
	st := n.State()
	return st == node.Created || st == node.Stopped
}

// call is Call without telling Options.OnCall; dec receives the call
// policy's decision, if it had one to make.
func (s *Session) call(ctx context.Context, id string, req *node.CallRequest, dec *Decision) (*mcp.CallToolResult, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	if e.stopped.Load() {
		return nil, heldError(id)
	}
	// Each call through a session is a hop of the chain that may have come
	// through graphs and nerve's own MCP endpoint (issue 21).
	ctx, err = node.WithHop(ctx, s.name, id)
	if err != nil {
		return nil, fmt.Errorf("@%s %s: %w", id, req.Tool, err)
	}
	t, err := s.tool(ctx, e, req.Tool)
	if err != nil {
		return nil, err
	}
	shown := req.Tool
	if t.view != nil {
		if err := t.view.refuse(req.Arguments); err != nil {
			return nil, fmt.Errorf("@%s %s: %w", id, shown, err)
		}
	}
	if err := s.argSchema(id, t).Validate(req.Arguments); err != nil {
		return nil, fmt.Errorf("@%s %s: %w", id, req.Tool, err)
	}
	if t.view != nil {
		// The node is called by the tool's own name, with the fixed
		// arguments (overrides.go).
		if req, err = t.view.request(req); err != nil {
			return nil, fmt.Errorf("@%s %s: %w", id, shown, err)
		}
	}
	if res := s.gate(ctx, id, shown, req.Tool, req.Arguments, dec); res != nil {
		return res, nil // refused by the call policy (policy.go)
	}
	// Starts a lazy node; waits for one that is starting or stopping.
	if err := s.await(ctx, e, true); err != nil {
		return nil, err
	}
	if !s.hub.active() {
		return s.callNode(ctx, e, req, shown)
	}
	call := s.callSeq.Add(1)
	start := time.Now()
	s.hub.publish(Event{Kind: EventCallStart, Node: id, Call: call, Tool: shown, Time: start})
	res, err := s.callNode(ctx, e, req, shown)
	end := Event{Kind: EventCallEnd, Node: id, Call: call, Tool: shown, Duration: time.Since(start)}
	if err != nil {
		end.Error = err.Error()
	} else if res != nil {
		end.IsError = res.IsError
	}
	s.hub.publish(end)
	return res, err
}

// callNode calls the node, which the waiting rule found able to serve. A
// lazy node stopped for being idle just then (it stops only with no call
// in flight) is started again and called once more. shown is the tool's
// name as the session lists it (req.Tool is the node's own).
func (s *Session) callNode(ctx context.Context, e *entry, req *node.CallRequest, shown string) (*mcp.CallToolResult, error) {
	res, err := e.n.CallTool(ctx, req)
	if errors.Is(err, node.ErrNotReady) {
		if st := e.n.State(); st == node.Stopping || catalogued(e.n) {
			if werr := s.await(ctx, e, true); werr != nil {
				return nil, werr
			}
			res, err = e.n.CallTool(ctx, req)
		}
	}
	return res, s.liveUnknown(ctx, e, shown, err)
}

// CallTool calls a tool by qualified ("node.tool") or LLM-safe name; it
// makes the Session a node.ToolCaller for agents.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage, observe func(node.CallEvent)) (*mcp.CallToolResult, error) {
	te, ok := s.Toolset(ctx).Lookup(name)
	if !ok {
		// A node that is not listed (ERROR, STOPPED, starting) is named
		// with its state and the fix, not as an unknown tool (issue 17).
		if id, tool, qualified := strings.Cut(name, "."); qualified {
			if _, err := s.entry(id); err == nil {
				return s.Call(ctx, id, &node.CallRequest{Tool: tool, Arguments: args, Observe: observe})
			}
		}
		return nil, fmt.Errorf("%w %q: no node offers it (list tools with `nerve tools`)", node.ErrUnknownTool, name)
	}
	return s.Call(ctx, te.Node, &node.CallRequest{Tool: te.Tool.Name, Arguments: args, Observe: observe})
}

// DescribeTool returns the tool a qualified or LLM-safe name names, or
// why it cannot be called: a node that cannot take calls is named with
// its state and the fix (node.NotReady). Graphs ask it before each step.
func (s *Session) DescribeTool(ctx context.Context, name string) (*mcp.Tool, error) {
	if te, ok := s.Toolset(ctx).Lookup(name); ok {
		return te.Tool, nil
	}
	if id, tool, qualified := strings.Cut(name, "."); qualified {
		if _, err := s.entry(id); err == nil {
			return s.Tool(ctx, id, tool)
		}
	}
	return nil, fmt.Errorf("%w %q: no node offers it (list tools with `nerve tools`)", node.ErrUnknownTool, name)
}

// Close stops every node in parallel and waits until they are stopped or
// ctx is done. The session cannot be used afterwards.
func (s *Session) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	nodes := s.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := n.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stopping node %q: %w", n.ID(), err)
			}
		})
	}
	s.startsMu.Lock()
	s.startsDone = true // no start is launched after this
	s.startsMu.Unlock()
	done := make(chan struct{})
	go func() { wg.Wait(); s.starts.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		<-done // nodes honour ctx in Stop; wait for them so none is left running
		errs = append(errs, fmt.Errorf("closing session %q: %w", s.name, ctx.Err()))
	}
	s.hub.closeAll()
	return errors.Join(errs...)
}

func (s *Session) entry(id string) (*entry, error) {
	s.mu.RLock()
	e, ok := s.nodes[id]
	if ok && e.n != nil {
		s.mu.RUnlock()
		return e, nil
	}
	err := s.notFoundLocked(id)
	s.mu.RUnlock()
	return nil, err
}

func (s *Session) notFoundLocked(id string) error {
	syncs.AssertRLocked(&s.mu)
	return &NotFoundError{Node: id, Known: append([]string(nil), s.order...)}
}

func (s *Session) saveState(id string, state json.RawMessage) error {
	s.mu.Lock()
	e, ok := s.nodes[id]
	if !ok {
		err := s.notFoundLocked(id)
		s.mu.Unlock()
		return err
	}
	e.spec.State = append(json.RawMessage(nil), state...)
	s.mu.Unlock()
	return s.persist()
}

func (s *Session) persist() error {
	if s.save == nil {
		return nil
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	// Take the snapshot under saveMu so saves land in change order.
	s.mu.RLock()
	specs := s.specsLocked()
	s.mu.RUnlock()
	return s.save(specs)
}

// NodeDir returns (and creates, 0700) the private folder of node id.
func (s *Session) NodeDir(id string) (string, error) {
	if s.dir == "" {
		return "", errors.New("session has no folder")
	}
	d := filepath.Join(s.dir, "nodes", id)
	return d, os.MkdirAll(d, 0o700)
}
