// Package daemon is nerve's session daemon: the sessions it holds, their
// persistence, the call log, and the local API (HTTP/1.1 + JSON) it serves
// over a Unix socket or, in embedded mode, over an in-memory connection.
// Only the command line (internal/cli) imports it; everything else reaches
// a daemon through pkg/client.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/internal/dashboard"
	"github.com/nerve-dev/nerve/internal/envfile"
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/internal/telemetry/metrics"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// DefaultSession is the session used when none is named.
const DefaultSession = "default"

// Options configure a Daemon. The zero value is an embedded daemon that
// persists nothing.
type Options struct {
	// Registry builds nodes; nil means an empty registry.
	Registry *session.Registry
	// Logger receives the daemon's logs; nil discards them.
	Logger *zap.Logger
	// Version is the build version sent in every response.
	Version string
	// Paths are nerve's files. Sessions are saved under Paths.Sessions and
	// node folders made there only when Persist is set.
	Paths paths.Paths
	// Persist saves every session's specs on each change and lets Restore
	// bring them back.
	Persist bool
	// CallLog, if set, is the file every call is appended to.
	CallLog string
	// CallLogMax caps the call log before it is rotated (0: 10 MB).
	CallLogMax int64
	// DefaultNodes are added to the default session when it is created
	// empty (embedded mode adds a bash node).
	DefaultNodes []node.Spec
	// Embedded marks a daemon serving one process in memory.
	Embedded bool
	// Socket is reported by GET /v1/version.
	Socket string
	// OnShutdown is called when a client asks the daemon to stop.
	OnShutdown func()
	// Cleanups remove what node kinds left behind when an earlier daemon
	// was killed (claude.CleanupStale). Restore calls each once with
	// Paths.Sessions, before it starts any node; Persist only.
	Cleanups []func(sessionsDir string) error
	// MCPListen is the address of the session MCP endpoint (streamable
	// HTTP), a loopback address; empty means $NERVE_MCP_LISTEN, else
	// 127.0.0.1 on a free port.
	MCPListen string
	// UI are the dashboard's hooks from above the daemon (sign-in, a
	// graph's steps); the dashboard is served beside the MCP endpoint.
	UI dashboard.Hooks
	// Secret answers nodes' ${keychain:NAME} (session.Options.Secret):
	// nerve's secrets (`nerve secret set`); nil: none is set.
	Secret func(name string) (value string, ok bool)
}

// Daemon holds named sessions and serves them through Handler.
type Daemon struct {
	opts    Options
	log     *zap.Logger
	started time.Time
	calls   *callLog
	handler http.Handler
	closing atomic.Bool
	// stopping: Serve is stopping; guard answers new requests 503
	// stopping.
	stopping atomic.Bool
	// mcp is the session MCP endpoint while it is served (Run starts it).
	mcp atomic.Pointer[mcpserver.Endpoint]
	// ui is the dashboard served beside it; nil when embedded.
	ui *dashboard.Dashboard
	// metrics are served beside it at /metrics (metrics.go); nil when
	// embedded.
	metrics *metrics.Metrics
	// bg tracks node starts that outlive the request (restore).
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
	// relays counts the connections switched to MCP (mcp_stdio.go);
	// Close waits for them.
	relays sync.WaitGroup

	// mu guards the fields below.
	mu       sync.Mutex
	sessions map[string]*held
	notices  []string
}

// held is one session and what the daemon keeps beside it.
type held struct {
	s *session.Session
	// loading suppresses saves while a saved session is registered again.
	loading atomic.Bool
	// orphanMu guards orphans: saved specs whose kind cannot be built by
	// this daemon. They are kept in the state file, never silently lost.
	orphanMu sync.Mutex
	orphans  []node.Spec
	// callMu guards calls: the call streams in flight, by node id, that
	// hear about their node's state changes.
	callMu sync.Mutex
	calls  map[string]map[*callStream]struct{}
}

// held returns the session called name and what the daemon keeps beside
// it, or nil.
func (d *Daemon) held(name string) *held {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions[name]
}

// New returns a daemon with no sessions yet; call Restore (or just serve:
// the default session is made on first use).
func New(opts *Options) (*Daemon, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Registry == nil {
		o.Registry = &session.Registry{}
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	d := &Daemon{
		opts:     o,
		log:      o.Logger,
		started:  time.Now(),
		sessions: make(map[string]*held),
	}
	d.bgCtx, d.bgCancel = context.WithCancel(context.Background())
	if !o.Embedded {
		d.ui = d.newDashboard() // dashboard.go
		d.metrics = d.newMetrics()
	}
	if o.CallLog != "" {
		cl, err := openCallLog(o.CallLog, o.CallLogMax)
		if err != nil {
			return nil, err
		}
		d.calls = cl
	}
	if o.Persist {
		if err := os.MkdirAll(o.Paths.Sessions, 0o700); err != nil {
			return nil, fmt.Errorf("creating the sessions folder: %w", err)
		}
	}
	d.handler = d.routes()
	return d, nil
}

// Handler returns the local API.
func (d *Daemon) Handler() http.Handler { return d.handler }

// ValidateSessionName checks a session name (the same rule as node ids).
func ValidateSessionName(name string) error {
	if node.ValidID(name) {
		return nil
	}
	return fmt.Errorf("invalid session name %q: use 1-63 lower-case letters, digits, '_' or '-', starting with a letter or digit", name)
}

// errSessionNotFound is returned for a session that does not exist.
type errSessionNotFound struct {
	name  string
	known []string
}

func (e *errSessionNotFound) Error() string {
	known := "none yet"
	if len(e.known) > 0 {
		known = strings.Join(e.known, ", ")
	}
	return fmt.Sprintf("no session %q (sessions: %s); a session is made when you add its first node: `nerve -s %s node add KIND NAME`", e.name, known, e.name)
}

// session returns the session called name. create makes it when missing;
// the default session always exists.
func (d *Daemon) session(ctx context.Context, name string, create bool) (*session.Session, error) {
	if err := ValidateSessionName(name); err != nil {
		return nil, badRequest(err)
	}
	if d.closing.Load() {
		return nil, session.ErrClosed
	}
	d.mu.Lock()
	h, ok := d.sessions[name]
	if ok {
		d.mu.Unlock()
		return h.s, nil
	}
	if !create && name != DefaultSession {
		known := d.namesLocked()
		d.mu.Unlock()
		return nil, &errSessionNotFound{name: name, known: known}
	}
	h = d.newHeldLocked(name)
	d.mu.Unlock()
	if name == DefaultSession && len(d.opts.DefaultNodes) > 0 {
		d.addDefaults(ctx, h.s)
	}
	return h.s, nil
}

// addDefaults adds the default nodes whose kind is registered, starting
// them in the background.
func (d *Daemon) addDefaults(ctx context.Context, s *session.Session) {
	for _, spec := range d.opts.DefaultNodes {
		if !d.opts.Registry.Has(spec.Kind) {
			continue
		}
		n, err := s.RegisterToStart(spec)
		if err != nil {
			d.log.Warn("adding a default node", zap.String("node", spec.ID), zap.Error(err))
			continue
		}
		d.startInBackground(s, []node.Node{n}, nil)
	}
}

func (d *Daemon) newHeldLocked(name string) *held {
	syncs.AssertLocked(&d.mu)
	h := &held{}
	opts := &session.Options{Logger: d.log, MCPEndpoint: d.sessionEndpoint(name), Secret: d.opts.Secret}
	if d.calls != nil || d.ui != nil || d.metrics != nil {
		// Every call of the session, whoever made it, is logged here once
		// and shown on the dashboard.
		opts.OnCall = func(_ context.Context, c *session.CallInfo) {
			if d.calls != nil {
				if err := d.calls.record(name, c); err != nil {
					d.log.Warn("writing the call log", zap.Error(err))
				}
			}
			if d.ui != nil {
				d.ui.Called(name, c)
			}
			if d.metrics != nil {
				d.metrics.Called(name, c)
			}
		}
	}
	if d.metrics != nil {
		opts.OnState = func(id string, _, to node.State) { d.metrics.StateChanged(name, id, to) } // starts
	}
	if d.opts.Paths.State != "" {
		envPath := EnvFile(d.opts.Paths)
		opts.ExtraEnv = func() ([]string, string) {
			env, err := envfile.Environ(envPath)
			if err != nil {
				d.log.Warn("reading the env file", zap.Error(err))
			}
			return env, envPath
		}
	}
	if d.opts.Persist {
		opts.Dir = filepath.Join(d.opts.Paths.Sessions, name)
		opts.Save = func(specs []node.Spec) error {
			if h.loading.Load() {
				return nil
			}
			h.orphanMu.Lock()
			all := append(specs, h.orphans...)
			h.orphanMu.Unlock()
			return saveSpecs(d.statePath(name), name, all, h.s.Settings())
		}
	}
	h.s = session.New(name, d.opts.Registry, opts)
	h.s.SetApprover(d.approver(h.s)) // approve.go
	d.sessions[name] = h
	return h
}

func (d *Daemon) namesLocked() []string {
	syncs.AssertLocked(&d.mu)
	names := make([]string, 0, len(d.sessions))
	for n := range d.sessions {
		names = append(names, n)
	}
	if !slices.Contains(names, DefaultSession) {
		names = append(names, DefaultSession)
	}
	sort.Strings(names)
	return names
}

func (d *Daemon) statePath(name string) string {
	return filepath.Join(d.opts.Paths.Sessions, name+".json")
}

// startInBackground starts nodes in parallel without holding up the
// caller; Close waits for (and cancels) them.
// done, if set, is called with each node's id once its start has returned
// (at once for a lazy node).
func (d *Daemon) startInBackground(s *session.Session, nodes []node.Node, done func(id string)) {
	sess := s.Name()
	if done == nil {
		done = func(string) {}
	}
	for _, n := range nodes {
		if l, ok := n.(node.Lazy); ok && l.StartsLazily() {
			_ = s.StartRegistered(d.bgCtx, n.ID()) // ends the wait only
			done(n.ID())
			continue // it knows its tools (catalogue); its first call starts it
		}
		d.bg.Go(func() {
			defer done(n.ID())
			if err := s.StartRegistered(d.bgCtx, n.ID()); err != nil {
				d.log.Warn("node did not start", zap.String("session", sess), zap.String("node", n.ID()), zap.Error(err))
			}
		})
	}
}

// Restore brings back every saved session: each node is registered at
// once (so the API shows it, STARTING) and all are started in parallel in
// the background; WaitStarted waits for them. A node that fails to start is
// in ERROR with its reason; the others are unaffected. A corrupt state file
// is moved aside with a log line and a notice.
func (d *Daemon) Restore(ctx context.Context) error {
	if !d.opts.Persist {
		_, err := d.session(ctx, DefaultSession, true)
		return err
	}
	// Temporaries of writes a SIGKILL cut short (issue 21): only this
	// daemon, which holds the lock, writes under the sessions folder.
	if n, err := atomicfile.RemoveStale(d.opts.Paths.Sessions); err != nil {
		d.log.Warn("cleaning up after an earlier daemon", zap.Error(err))
	} else if n > 0 {
		d.log.Info("removed temporary files an earlier daemon left", zap.Int("files", n))
	}
	for _, clean := range d.opts.Cleanups {
		if err := clean(d.opts.Paths.Sessions); err != nil {
			d.log.Warn("cleaning up after an earlier daemon", zap.Error(err))
		}
	}
	entries, err := os.ReadDir(d.opts.Paths.Sessions)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the sessions folder: %w", err)
	}
	for _, e := range entries {
		name, ok := cutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || ValidateSessionName(name) != nil {
			continue
		}
		d.restoreOne(name)
	}
	_, err = d.session(ctx, DefaultSession, true)
	return err
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return "", false
}

func (d *Daemon) restoreOne(name string) {
	path := d.statePath(name)
	specs, settings, err := loadState(path)
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if mvErr := os.Rename(path, aside); mvErr != nil {
			aside = "(could not move it: " + mvErr.Error() + ")"
		}
		d.log.Error("state file is corrupt; moved aside, the session starts empty",
			zap.String("session", name), zap.String("file", path), zap.String("moved_to", aside), zap.Error(err))
		d.notice(fmt.Sprintf("session %q: its state file was corrupt (%v) and was moved to %s; the session starts empty — copy the nodes you need from that file", name, err, aside))
		return
	}
	d.mu.Lock()
	if _, ok := d.sessions[name]; ok {
		d.mu.Unlock()
		return
	}
	h := d.newHeldLocked(name)
	d.mu.Unlock()
	h.s.LoadSettings(settings)
	h.loading.Store(true)
	var nodes []node.Node
	left := d.leftoverRestoring(name)
	saved := make(map[string]bool, len(specs))
	var marks []string
	for _, spec := range specs {
		if _, held := left[spec.ID]; !held && node.ValidateID(spec.ID) == nil {
			marks = append(marks, spec.ID)
		}
	}
	d.markRestoring(name, marks)
	for _, spec := range specs {
		saved[spec.ID] = true
		if began, ok := left[spec.ID]; ok {
			// Its marker stays until `nerve node restart` or `rm`: a daemon
			// started again before then holds it again.
			reason := heldReason(spec.ID, began)
			if _, err := h.s.Hold(spec, reason); err != nil {
				d.log.Error("holding a node", zap.String("session", name), zap.String("node", spec.ID), zap.Error(err))
				continue
			}
			d.log.Error("saved node not restored: the daemon died restoring it last time", zap.String("session", name), zap.String("node", spec.ID))
			d.notice(fmt.Sprintf("session %q: node %q is ERROR: %s", name, spec.ID, reason))
			continue
		}
		n, err := h.s.RegisterToStart(spec)
		if err != nil {
			d.unmarkRestoring(name, spec.ID)
			d.log.Error("saved node cannot be built; kept in the state file", zap.String("session", name), zap.String("node", spec.ID), zap.Error(err))
			d.notice(fmt.Sprintf("session %q: node %q did not come back: %v", name, spec.ID, err))
			h.orphanMu.Lock()
			h.orphans = append(h.orphans, spec)
			h.orphanMu.Unlock()
			continue
		}
		if spec.Stopped {
			_ = h.s.StartRegistered(d.bgCtx, spec.ID) // starts nothing: ends the wait for it
			d.unmarkRestoring(name, spec.ID)
			continue // stopped with `nerve node stop`: stays so until `nerve node start`
		}
		nodes = append(nodes, n)
	}
	h.loading.Store(false)
	for id := range left {
		if !saved[id] {
			d.unmarkRestoring(name, id)
		}
	}
	d.log.Info("session restored", zap.String("session", name), zap.Int("nodes", len(nodes)))
	d.startInBackground(h.s, nodes, func(id string) { d.unmarkRestoring(name, id) })
	// The MCP tasks the daemon left working go on (a graph's run from its
	// journal), whether or not a client comes back to poll them.
	mcpserver.OpenTasks(h.s, d.log.Named("mcp"))
}

// WaitStarted waits until every background start (restore, default nodes)
// is done or ctx ends.
func (d *Daemon) WaitStarted(ctx context.Context) error {
	done := make(chan struct{})
	go func() { d.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Daemon) notice(msg string) {
	d.mu.Lock()
	d.notices = append(d.notices, msg)
	d.mu.Unlock()
}

// Notices returns what the daemon wants a person to know.
func (d *Daemon) Notices() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.notices)
}

// removeSession closes a session, stopping its nodes, and forgets its
// saved state. The default session comes back empty on next use.
func (d *Daemon) removeSession(ctx context.Context, name string) error {
	if err := ValidateSessionName(name); err != nil {
		return badRequest(err)
	}
	d.mu.Lock()
	h, ok := d.sessions[name]
	if !ok {
		known := d.namesLocked()
		d.mu.Unlock()
		if name == DefaultSession {
			return nil
		}
		return &errSessionNotFound{name: name, known: known}
	}
	delete(d.sessions, name)
	d.mu.Unlock()
	h.loading.Store(true) // no save may resurrect the file
	err := h.s.Close(ctx)
	if d.opts.Persist {
		if rmErr := os.Remove(d.statePath(name)); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		_ = os.RemoveAll(filepath.Join(d.opts.Paths.Sessions, name))
	}
	return err
}

// Close stops every node of every session in parallel and waits until
// they are stopped or ctx ends. Saved state is kept: a daemon that starts
// again restores it.
func (d *Daemon) Close(ctx context.Context) error {
	if d.closing.Swap(true) {
		return nil
	}
	d.bgCancel()
	d.mu.Lock()
	all := make([]*held, 0, len(d.sessions))
	for _, h := range d.sessions {
		all = append(all, h)
	}
	d.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, h := range all {
		// Stopping nodes must not rewrite the state file.
		h.loading.Store(true)
		wg.Go(func() { errs[i] = h.s.Close(ctx) })
	}
	wg.Wait()
	d.bg.Wait()
	d.relays.Wait()
	if d.calls != nil {
		errs = append(errs, d.calls.close())
	}
	return errors.Join(errs...)
}
