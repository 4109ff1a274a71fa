package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/node"
)

// ToolName is the name of the node's one tool.
const ToolName = "ask_claude"

// Timings of the process's life; tests shorten them.
const (
	startTimeout   = 2 * time.Minute  // for the initialize handshake
	stopGrace      = 3 * time.Second  // per step of stop: EOF, SIGTERM, SIGKILL
	interruptGrace = 10 * time.Second // for Claude to end an interrupted turn
)

// New is the claude kind's node.Factory. A node with session_tools set
// adds the session's MCP endpoint (env.MCPEndpoint) to Claude's config at
// each start, and fails to start without one.
func New(spec node.Spec, env node.Env) (node.Node, error) {
	opts, err := decodeOptions(&spec)
	if err != nil {
		return nil, err
	}
	st, err := decodeState(&spec)
	if err != nil {
		return nil, err
	}
	if _, err := buildArgv(spec.Command, launch{sessionID: "x"}); err != nil {
		return nil, err
	}
	n := &Node{
		spec: spec, env: env, opts: opts, state: st,
		tools:          []*mcp.Tool{newTool(opts)},
		sem:            make(chan struct{}, 1),
		stopGrace:      stopGrace,
		interruptGrace: interruptGrace,
	}
	n.Init(spec, env)
	return n, nil
}

func newTool(o Options) *mcp.Tool {
	return &mcp.Tool{
		Name:  ToolName,
		Title: "Ask Claude Code",
		Description: "Send a message to a Claude Code agent and return its final answer. The agent keeps " +
			"its conversation between calls (it remembers earlier messages), can read and edit files " +
			"and run commands in its working folder, and uses its MCP tools. A call runs one turn; " +
			"it is stopped after " + time.Duration(o.Timeout).String() + ".",
		InputSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"message": {Type: "string", Description: "What to ask or tell Claude, e.g. \"summarise README.md\"."},
			},
			Required:             []string{"message"},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}
}

func ptr[T any](v T) *T { return &v }

// Node is a claude node.
type Node struct {
	node.Base
	spec  node.Spec
	env   node.Env
	opts  Options
	tools []*mcp.Tool
	// sem lets one call at a time talk to Claude; others wait their turn.
	sem chan struct{}

	stopGrace, interruptGrace time.Duration

	// mu guards the fields below.
	mu       sync.Mutex
	proc     *proc
	cfgPath  string // the MCP config file nerve wrote, or ""
	tmpDir   string // the folder made for it when env.Dir is empty
	names    []string
	state    persisted
	servers  []MCPServer
	model    string
	version  string
	permMode string
	account  json.RawMessage
	procCost float64 // total_cost_usd of the current process (cumulative there)
	baseCost float64 // cost of the node's earlier processes
	intr     chan struct{}
}

func (n *Node) log() *zap.Logger { return n.env.Log() }

func (n *Node) Start(ctx context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	if err := n.start(ctx); err != nil {
		n.Machine.To(node.Error, err.Error())
		return fmt.Errorf("starting claude node %q: %w", n.ID(), err)
	}
	if err := n.Machine.To(node.Ready, ""); err != nil {
		_, reason := n.Machine.Get()
		return fmt.Errorf("starting claude node %q: %s", n.ID(), reason)
	}
	return nil
}

// start writes the MCP config and starts Claude with the node's session.
func (n *Node) start(ctx context.Context) error {
	n.mu.Lock()
	st := n.state
	n.mu.Unlock()
	if st.SessionID == "" {
		st.SessionID = n.opts.SessionID
		if st.SessionID == "" {
			st.SessionID = uuid.NewString()
		}
		n.setState(func(p *persisted) { p.SessionID = st.SessionID })
	}
	var ep *Endpoint
	if n.opts.SessionTools {
		var e Endpoint
		ok := n.env.MCPEndpoint != nil
		if ok {
			e.URL, e.Token, ok = n.env.MCPEndpoint()
		}
		if !ok {
			return errors.New("session tools need the MCP endpoint (this nerve serves none: run the node in the daemon, or drop --session-tools)")
		}
		ep = &e
	}
	servers, err := loadServers(n.opts.MCPConfig, n.env.Lookup)
	if err != nil {
		return err
	}
	if err := n.writeConfig(servers, ep); err != nil {
		return err
	}
	l := launch{
		sessionID:  st.SessionID,
		resume:     st.Started,
		strictMCP:  n.opts.StrictMCPConfig,
		permission: n.opts.PermissionMode,
	}
	if !st.Started {
		l.forkFrom = n.opts.ForkFromSession
	}
	n.mu.Lock()
	l.mcpConfig = n.cfgPath
	n.mu.Unlock()
	err = n.spawn(ctx, l)
	if err != nil && errors.Is(err, errInUse) && !l.resume && l.forkFrom == "" {
		// Claude has a transcript under this id already (a message was
		// sent before the state was saved): continue it.
		n.setState(func(p *persisted) { p.Started = true })
		l.resume = true
		err = n.spawn(ctx, l)
	}
	if err != nil {
		n.removeConfig()
	}
	return err
}

// writeConfig writes Claude's MCP config file, if there are servers.
func (n *Node) writeConfig(servers []mcpconf.Server, ep *Endpoint) error {
	data, names, err := claudeConfig(servers, ep)
	if err != nil || len(names) == 0 {
		return err
	}
	dir, tmp := n.env.Dir, ""
	if dir == "" {
		if tmp, err = os.MkdirTemp("", "nerve-claude-"); err != nil {
			return fmt.Errorf("creating a private folder for Claude's MCP config: %w", err)
		}
		dir = tmp
	}
	path, err := writeConfig(dir, data)
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return err
	}
	n.mu.Lock()
	n.cfgPath, n.tmpDir, n.names = path, tmp, names
	n.mu.Unlock()
	return nil
}

func (n *Node) removeConfig() {
	n.mu.Lock()
	path, tmp := n.cfgPath, n.tmpDir
	n.cfgPath, n.tmpDir = "", ""
	n.mu.Unlock()
	if path != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			n.log().Warn("removing Claude's MCP config", zap.Error(err))
		}
	}
	if tmp != "" {
		os.RemoveAll(tmp)
	}
}

var errInUse = errors.New("session id already in use")

// spawn starts one Claude process and waits for its initialize answer.
func (n *Node) spawn(ctx context.Context, l launch) error {
	argv, err := buildArgv(n.spec.Command, l)
	if err != nil {
		return err
	}
	env, err := n.childEnv()
	if err != nil {
		return err
	}
	cwd, err := expandHome(n.spec.Cwd)
	if err != nil {
		return err
	}
	p, err := startProc(argv, env, cwd, n.stopGrace)
	if err != nil {
		if errors.Is(err, errNotInstalled) {
			return fmt.Errorf("%w (%v): install it with `npm install -g @anthropic-ai/claude-code`, or give its path after -- (e.g. -- /opt/claude/bin/claude)", errNotInstalled, strings.TrimPrefix(err.Error(), errNotInstalled.Error()+": "))
		}
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	resp, err := p.control(hctx, map[string]any{"subtype": "initialize"})
	if errors.Is(err, errRefused) {
		// An older Claude that refuses initialize is still running.
		n.log().Info("claude refused initialize", zap.Error(err))
		err = nil
	}
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			// It exited, or its stdin is closed because it is exiting.
			waitFor(p.exited, n.stopGrace)
		}
		p.stop()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return n.exitError(p, l, "during start")
		}
		return fmt.Errorf("claude did not answer within %v of starting (%w)%s", startTimeout, err, p.cp.StderrTail(10))
	}
	var init struct {
		Account json.RawMessage `json:"account"`
		Version string          `json:"claude_code_version"`
		Mode    string          `json:"current_permission_mode"`
	}
	json.Unmarshal(resp, &init)
	n.mu.Lock()
	n.proc = p
	n.account, n.version, n.permMode = init.Account, init.Version, init.Mode
	n.baseCost, n.procCost = n.state.CostUSD, 0
	n.mu.Unlock()
	go n.watch(p)
	return nil
}

// exitError explains why p ended, recognising what a person can fix.
func (n *Node) exitError(p *proc, l launch, when string) error {
	lines := p.stderr.Lines()
	all := strings.Join(lines, "\n")
	t := childproc.Tail(lines, 10)
	switch {
	case strings.Contains(all, "is already in use"):
		return fmt.Errorf("%w: claude refused --session-id %s%s", errInUse, l.sessionID, t)
	case strings.Contains(all, "No conversation found"):
		id := l.sessionID
		if l.forkFrom != "" {
			id = l.forkFrom
		}
		return fmt.Errorf("claude has no conversation %s to resume (its transcript under ~/.claude/projects is gone, or HOME changed): remove the node and add it again to start a new one%s", id, t)
	case isLoginError(all):
		return fmt.Errorf("%s%s", notLoggedIn, t)
	}
	return fmt.Errorf("claude exited %s (%s)%s", when, p.exitText(), t)
}

const notLoggedIn = "Claude Code is not logged in: run `claude` in a terminal and /login (or set ANTHROPIC_API_KEY for the daemon), then restart the node"

// watch moves the node to ERROR when its current process ends on its own.
func (n *Node) watch(p *proc) {
	<-p.exited
	n.mu.Lock()
	current := n.proc == p
	n.mu.Unlock()
	if current {
		n.fail(p, n.exitError(p, launch{}, "unexpectedly").Error())
	}
}

// fail moves the node to ERROR because of p, unless p is no longer its
// process (stopped or replaced), and ends p.
func (n *Node) fail(p *proc, reason string) {
	n.mu.Lock()
	current := n.proc == p
	if current {
		n.proc = nil
	}
	n.mu.Unlock()
	if current {
		n.Machine.To(node.Error, reason)
		n.log().Warn("claude node failed", zap.String("reason", reason))
	}
	p.stop()
}

func (n *Node) childEnv() ([]string, error) {
	env := n.env.Environ()
	for _, k := range sortedKeys(n.spec.Env) {
		v, err := mcpconf.Expand(n.spec.Env[k], n.env.Lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s of claude node %q: %w", k, n.ID(), mcpconf.Explain(err, n.env.VarsWhere()))
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

func expandHome(dir string) (string, error) {
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expanding %q: %w", dir, err)
		}
		return filepath.Join(home, dir[1:]), nil
	}
	return dir, nil
}

func (n *Node) Stop(ctx context.Context) error {
	switch n.State() {
	case node.Created, node.Stopped:
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p != nil {
		p.stop()
	}
	n.removeConfig()
	return n.Machine.To(node.Stopped, "")
}

// Interrupt ends the turn in flight, if any; the conversation and the node
// stay.
func (n *Node) Interrupt(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.intr != nil {
		select {
		case n.intr <- struct{}{}:
		default: // already asked
		}
	}
	return nil
}

func (n *Node) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	return n.tools, nil
}

func (n *Node) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if req.Tool != ToolName {
		return nil, fmt.Errorf("%w %q: claude node %q has one tool, %q", node.ErrUnknownTool, req.Tool, n.ID(), ToolName)
	}
	var args struct {
		Message *string `json:"message"`
	}
	if len(req.Arguments) > 0 {
		if err := decodeArgs(req.Arguments, &args); err != nil {
			return nil, fmt.Errorf("%w: %v (want {\"message\": \"...\"})", node.ErrBadArgs, err)
		}
	}
	if args.Message == nil || strings.TrimSpace(*args.Message) == "" {
		return nil, fmt.Errorf("%w: message is required and must not be empty (e.g. {\"message\": \"summarise README.md\"})", node.ErrBadArgs)
	}
	select {
	case n.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-n.sem }()
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	res, err := n.ask(ctx, req, *args.Message)
	n.EndCall(err != nil || res.IsError)
	return res, err
}

func decodeArgs(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ask runs one turn: it writes the message and follows the events until
// the result, interrupting the turn on Interrupt, timeout or cancellation.
func (n *Node) ask(ctx context.Context, req *node.CallRequest, msg string) (*mcp.CallToolResult, error) {
	intr := make(chan struct{}, 1)
	n.mu.Lock()
	p, st := n.proc, n.state
	n.intr = intr
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.intr = nil
		n.mu.Unlock()
	}()
	if p == nil {
		return nil, fmt.Errorf("claude node %q has no process: %w", n.ID(), node.ErrNotReady)
	}
	p.events.drain() // left from an earlier turn
	if !st.Started {
		// From now on Claude has a transcript under the id: resume it.
		n.setState(func(p *persisted) { p.Started = true })
	}
	if err := p.write(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": msg},
		"parent_tool_use_id": nil,
		"session_id":         st.SessionID,
	}); err != nil {
		return nil, fmt.Errorf("claude node %q: %w", n.ID(), err)
	}

	t := newTurn(req)
	timeout := time.Duration(n.opts.Timeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	done := ctx.Done()
	var stopped string // why nerve interrupted the turn
	var grace <-chan time.Time
	interrupt := func(why string) {
		if stopped != "" {
			return
		}
		stopped = why
		grace = time.After(n.interruptGrace)
		// The answer is the result event; the control response only says
		// Claude got the request. Bounded by interruptGrace.
		go func() {
			ictx, cancel := context.WithTimeout(context.Background(), n.interruptGrace)
			defer cancel()
			if _, err := p.control(ictx, map[string]any{"subtype": "interrupt"}); err != nil {
				n.log().Info("interrupt not acknowledged", zap.Error(err))
			}
		}()
	}
	for {
		select {
		case <-p.events.notify:
			for _, line := range p.events.drain() {
				if t.handle(line) {
					return n.finish(p, t, stopped), nil
				}
			}
		case <-p.exited:
			for _, line := range p.events.drain() {
				if t.handle(line) {
					return n.finish(p, t, stopped), nil
				}
			}
			n.mu.Lock()
			current := n.proc == p
			n.mu.Unlock()
			if !current {
				// The watcher may have failed the node first.
				if st, reason := n.Machine.Get(); st == node.Error {
					return nil, fmt.Errorf("claude node %q: %s", n.ID(), reason)
				}
				return nil, fmt.Errorf("claude node %q was stopped during the call", n.ID())
			}
			err := n.exitError(p, launch{}, "during the call")
			n.fail(p, err.Error())
			return nil, fmt.Errorf("claude node %q: %w", n.ID(), err)
		case <-done:
			done = nil
			interrupt("cancelled")
		case <-timer.C:
			interrupt("timed out after " + timeout.String())
		case <-intr:
			interrupt("interrupted")
		case <-grace:
			return n.restartStuck(ctx, p, t, stopped)
		}
	}
}

// restartStuck replaces a process that did not end an interrupted turn
// with a new one resuming the same conversation.
func (n *Node) restartStuck(ctx context.Context, p *proc, t *turn, why string) (*mcp.CallToolResult, error) {
	n.mu.Lock()
	current := n.proc == p
	if current {
		n.proc = nil
	}
	id := n.state.SessionID
	cfg := n.cfgPath
	n.mu.Unlock()
	p.stop()
	if !current {
		return nil, fmt.Errorf("claude node %q was stopped during the call", n.ID())
	}
	err := n.spawn(context.WithoutCancel(ctx), launch{
		sessionID: id, resume: true, mcpConfig: cfg,
		strictMCP: n.opts.StrictMCPConfig, permission: n.opts.PermissionMode,
	})
	if err != nil {
		reason := fmt.Sprintf("restarting claude after it ignored an interrupt: %v", err)
		n.Machine.To(node.Error, reason)
		return nil, fmt.Errorf("claude node %q: %s", n.ID(), reason)
	}
	text := fmt.Sprintf("%s: Claude did not end the turn within %v, so nerve restarted it; the conversation is kept", why, n.interruptGrace)
	return errorResult(text, t.text.String()), nil
}

func errorResult(msg, partial string) *mcp.CallToolResult {
	if partial != "" {
		msg += "\n\npartial answer:\n" + partial
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// finish accounts for the turn's result and builds the call's result.
func (n *Node) finish(p *proc, t *turn, stopped string) *mcp.CallToolResult {
	r := t.result
	n.mu.Lock()
	turnCost := max(r.TotalCostUSD-n.procCost, 0)
	n.procCost = max(n.procCost, r.TotalCostUSD)
	n.state.CostUSD = n.baseCost + n.procCost
	n.state.Turns++
	if t.init != nil {
		n.servers = t.init.servers()
		n.model = t.init.Model
		n.permMode = t.init.PermissionMode
	}
	st := n.state
	n.mu.Unlock()
	n.save(st)
	if len(r.Usage) > 0 && string(r.Usage) != "null" {
		t.req.Emit(node.CallEvent{Kind: node.EventStep, Step: "usage", Data: r.Usage})
	}
	t.req.Emit(step("cost", map[string]any{
		"turn_cost_usd": turnCost, "total_cost_usd": st.CostUSD,
		"duration_ms": r.DurationMS, "num_turns": r.NumTurns, "turns": st.Turns,
	}))

	answer := ""
	if r.Result != nil {
		answer = *r.Result
	}
	switch {
	case t.loggedOut:
		n.fail(p, notLoggedIn)
		return errorResult(notLoggedIn+" (Claude said: "+strings.TrimSpace(firstNonEmpty(answer, t.text.String()))+")", "")
	case stopped != "":
		return errorResult(stopped+": the turn was stopped; the node is ready for the next message", t.text.String())
	case r.IsError:
		msg := firstNonEmpty(answer, strings.Join(r.Errors, "; "), "claude reported an error ("+r.Subtype+")")
		return errorResult(msg, "")
	}
	if answer == "" {
		answer = t.text.String()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// setState changes the persisted state and saves it.
func (n *Node) setState(f func(*persisted)) {
	n.mu.Lock()
	f(&n.state)
	st := n.state
	n.mu.Unlock()
	n.save(st)
}

func (n *Node) save(st persisted) {
	if n.env.SaveState == nil {
		return
	}
	data, err := json.Marshal(st)
	if err == nil {
		err = n.env.SaveState(data)
	}
	if err != nil {
		n.log().Warn("saving the claude session id", zap.Error(err))
	}
}

// Info shows the Claude session id, model, cumulative cost and turns, and
// the MCP servers Claude was given.
func (n *Node) Info() node.Info {
	info := n.BaseInfo()
	info.Tools = len(n.tools)
	n.mu.Lock()
	defer n.mu.Unlock()
	d := map[string]any{
		"session_id": n.state.SessionID,
		"cost_usd":   n.state.CostUSD,
		"turns":      n.state.Turns,
	}
	if n.model != "" {
		d["model"] = n.model
	}
	if n.version != "" {
		d["claude_code_version"] = n.version
	}
	if n.permMode != "" {
		d["permission_mode"] = n.permMode
	}
	if len(n.names) > 0 {
		d["mcp_servers"] = n.names
	}
	if len(n.servers) > 0 {
		d["mcp_status"] = n.servers
	}
	if n.cfgPath != "" {
		d["mcp_config_file"] = n.cfgPath
	}
	if n.opts.ForkFromSession != "" {
		d["forked_from"] = n.opts.ForkFromSession
	}
	if len(n.account) > 0 {
		d["account"] = n.account
	}
	if n.proc != nil {
		d["pid"] = n.proc.pid
	}
	info.Details = d
	cmd := n.spec.Command
	if len(cmd) == 0 {
		cmd = DefaultCommand
	}
	info.Summary = strings.Join(cmd, " ") + " · session " + n.state.SessionID
	return info
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
