//go:build unix

package bash

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/node"
	"go.uber.org/zap"
)

// Node is a bash node: one persistent bash process.
type Node struct {
	node.Base
	spec  node.Spec
	env   node.Env
	opts  Options
	tools []*mcp.Tool
	// life serialises Start and Stop.
	life sync.Mutex
	// sem holds the one call allowed at a time.
	sem chan struct{}
	// endMu orders a call's final state change against the watcher that
	// moves an idle node to ERROR when its shell dies.
	endMu sync.Mutex

	// mu guards the fields below.
	mu   sync.Mutex
	sh   *shell
	intr chan struct{} // interrupt of the call in flight; nil when idle
	// running is the call in flight as its command sees it in
	// node.FromCallEnv (fromCall); "" when idle.
	running string
	// lost says why the last shell ended during a call (`exit 3`, `set -e`
	// and a failing command, a kill): sh is nil and the next call starts a
	// fresh shell (docs/nodes.md, "When the shell ends").
	lost  string
	watch sync.WaitGroup
}

var _ node.Node = (*Node)(nil)

// maxTimeout bounds timeout_s so that the duration cannot overflow.
const maxTimeout = 100 * 365 * 24 * time.Hour

// New builds a bash node from spec; it is a node.Factory. The shell starts
// with Start.
func New(spec node.Spec, env node.Env) (node.Node, error) {
	if spec.Kind == "" {
		spec.Kind = Kind
	}
	spec = spec.Clone()
	opts, err := decodeOptions(&spec)
	if err != nil {
		return nil, err
	}
	n := &Node{spec: spec, env: env, opts: opts, sem: make(chan struct{}, 1)}
	n.tools = []*mcp.Tool{newTool(opts)}
	n.Init(spec, env)
	return n, nil
}

// shellPath returns the program to run: the spec's command or bash.
func (n *Node) shellPath() (string, []string) {
	if len(n.spec.Command) == 0 {
		return "bash", nil
	}
	return n.spec.Command[0], n.spec.Command[1:]
}

// startDir returns the folder the shell starts in: the spec's cwd (with a
// leading ~ for the home folder), else the home folder, else nerve's own.
func (n *Node) startDir() (string, error) {
	dir := n.spec.Cwd
	home, herr := os.UserHomeDir()
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		if herr != nil {
			return "", fmt.Errorf("cwd %q: %w (give an absolute folder)", dir, herr)
		}
		dir = filepath.Join(home, dir[1:])
	}
	if dir == "" {
		if herr == nil {
			dir = home
		} else if wd, err := os.Getwd(); err == nil {
			dir = wd
		}
	}
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil {
			return "", fmt.Errorf("cwd %q: %w (create it or give another folder with --cwd)", dir, err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("cwd %q is not a folder (give a folder with --cwd)", dir)
		}
	}
	return dir, nil
}

func (n *Node) Start(ctx context.Context) error {
	n.life.Lock()
	defer n.life.Unlock()
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return fmt.Errorf("starting bash node %q: %w", n.ID(), err)
	}
	sh, err := n.startShell(ctx)
	if err != nil {
		_ = n.Machine.To(node.Error, err.Error())
		return fmt.Errorf("starting bash node %q: %w", n.ID(), err)
	}
	n.mu.Lock()
	n.sh, n.lost = sh, ""
	n.watch.Add(1)
	n.mu.Unlock()
	n.env.Log().Debug("bash shell started", zap.Int("pid", sh.pid), zap.String("path", sh.path), zap.String("dir", sh.dir))
	go n.watchShell(sh)
	return n.Machine.ToIf(node.Ready, "", node.Starting)
}

// freshShell starts the shell of a node whose last shell ended during a
// call (n.lost), for the call about to run; the caller holds n.sem. It
// returns the shell, or nil and the error that put the node in ERROR.
func (n *Node) freshShell(ctx context.Context) (*shell, string, error) {
	n.mu.Lock()
	sh, lost := n.sh, n.lost
	n.mu.Unlock()
	if sh != nil || lost == "" || n.State() != node.Ready {
		return sh, "", nil
	}
	sh, err := n.startShell(ctx)
	if err != nil {
		err = fmt.Errorf("starting a fresh shell (the last one ended: %s): %w", lost, err)
		_ = n.Machine.ToIf(node.Error, err.Error(), node.Ready)
		return nil, "", err
	}
	n.mu.Lock()
	// Stop moves the node to STOPPING before it takes n.sh: a shell put
	// here while READY is the one Stop closes.
	if n.State() != node.Ready || n.sh != nil {
		n.mu.Unlock()
		_ = sh.close(context.WithoutCancel(ctx))
		return nil, "", n.notReady()
	}
	n.sh, n.lost = sh, ""
	n.watch.Add(1)
	n.mu.Unlock()
	n.env.Log().Info("bash: a fresh shell, the last one ended during a call", zap.Int("pid", sh.pid), zap.String("reason", lost))
	go n.watchShell(sh)
	return sh, lost, nil
}

func (n *Node) startShell(ctx context.Context) (*shell, error) {
	prog, args := n.shellPath()
	path, err := exec.LookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("%s not found: %w (install bash, or set the node's command to the path of bash)", prog, err)
	}
	dir, err := n.startDir()
	if err != nil {
		return nil, err
	}
	env := n.env.Environ()
	for k, v := range n.spec.Env {
		v, err := mcpconf.Expand(v, n.env.Lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s of bash node %q: %w", k, n.ID(), mcpconf.Explain(err, n.env.VarsWhere()))
		}
		env = append(env, k+"="+v)
	}
	return startShell(ctx, shellConfig{path: path, args: args, dir: dir, env: env, id: n.ID()})
}

// watchShell moves an idle node to ERROR when its shell dies between calls
// (a call in flight that sees its shell end leaves the next call a fresh
// one instead).
func (n *Node) watchShell(sh *shell) {
	defer n.watch.Done()
	<-sh.exited
	n.endMu.Lock()
	defer n.endMu.Unlock()
	n.mu.Lock()
	mine := n.sh == sh
	n.mu.Unlock()
	if mine && n.Machine.ToIf(node.Error, sh.deathReason(), node.Ready) == nil {
		n.env.Log().Warn("bash shell ended while idle", zap.String("reason", sh.deathReason()))
	}
}

func (n *Node) Stop(ctx context.Context) error {
	n.life.Lock()
	defer n.life.Unlock()
	if st := n.State(); st == node.Created || st == node.Stopped {
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return fmt.Errorf("stopping bash node %q: %w", n.ID(), err)
	}
	n.mu.Lock()
	sh := n.sh
	n.sh = nil
	n.mu.Unlock()
	var err error
	if sh != nil {
		err = sh.close(ctx)
	}
	n.watch.Wait()
	// The call in flight, if any, sees its shell die and returns; wait for
	// it so that it cannot touch the state of a restarted node.
	select {
	case n.sem <- struct{}{}:
		<-n.sem
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("waiting for the call in flight: %w", ctx.Err())
		}
	}
	if terr := n.Machine.To(node.Stopped, ""); err == nil {
		err = terr
	}
	if err != nil {
		return fmt.Errorf("stopping bash node %q: %w", n.ID(), err)
	}
	return nil
}

// Interrupt stops the command in flight, if any; the shell keeps its state.
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
		return nil, fmt.Errorf("%w %q: bash node %q has one tool, %q", node.ErrUnknownTool, req.Tool, n.ID(), ToolName)
	}
	a, err := parseArgs(req.Arguments)
	if err != nil {
		return nil, err
	}
	timeout := time.Duration(n.opts.Timeout)
	if a.TimeoutS != nil {
		timeout = maxTimeout
		if secs := *a.TimeoutS; secs < maxTimeout.Seconds() {
			timeout = max(time.Duration(secs*float64(time.Second)), time.Millisecond)
		}
	}
	// A call made from inside the command in flight (`nerve call @sh …`
	// in a command of @sh, a graph step's command calling its own node)
	// would wait for that command, which waits for it: refuse it now.
	if from, _ := req.Meta[node.FromCallMetaKey].(string); from != "" {
		n.mu.Lock()
		running := n.running
		n.mu.Unlock()
		if from == running {
			return nil, fmt.Errorf("bash node %q is running the command this call was made from (`nerve call @%s` inside @%s's own shell): it runs one command at a time, so this call would wait for that command, and it for this call, until its timeout; run the inner command in the shell directly, or on another bash node", n.ID(), n.ID(), n.ID())
		}
	}
	// One call at a time: a second caller waits its turn.
	select {
	case n.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the bash call in flight on node %q: %w", n.ID(), ctx.Err())
	}
	defer func() { <-n.sem }()

	sh, fresh, err := n.freshShell(ctx)
	if err != nil {
		return nil, err
	}
	// Interrupt must find the call from the moment it is BUSY.
	intr := make(chan struct{}, 1)
	n.mu.Lock()
	n.intr = intr
	if sh != nil {
		n.running = fromCall(sh.token, sh.seq+1) // the seq run gives it
	}
	n.mu.Unlock()
	if err := n.Machine.ToIf(node.Busy, "", node.Ready); err != nil || sh == nil {
		n.mu.Lock()
		n.intr, n.running = nil, ""
		n.mu.Unlock()
		return nil, n.notReady()
	}
	n.CallStarted()

	var emit func(string)
	if req.Observe != nil {
		emit = func(s string) { req.Emit(node.CallEvent{Kind: node.EventText, Text: s}) }
	}
	oc, err := sh.run(ctx, a.Command, a.Args, timeout, n.opts.OutputCap, n.spoolDir(), emit, intr)

	n.mu.Lock()
	n.intr, n.running = nil, ""
	n.mu.Unlock()
	n.endMu.Lock()
	select {
	case <-sh.exited:
		if oc.died == "" {
			oc.died = sh.deathReason()
		}
	default:
	}
	if oc.died != "" && n.State() == node.Stopping {
		oc.died = stoppedReason
	} else if oc.died != "" {
		// The command ended the shell (`exit 3`, `set -e`, `exec`) or
		// it was killed: the call says so and the next call starts a
		// fresh shell, rather than the node waiting in ERROR for a
		// restart (issue 27).
		n.env.Log().Warn("bash shell ended during a call", zap.String("reason", oc.died))
		select {
		case <-sh.exited:
			oc.exit = sh.exitCode()
			if t := trimExitEcho(oc.out, oc.exit); oc.total == int64(len(oc.out)) {
				oc.out, oc.total = t, int64(len(t))
			}
		default:
		}
		oc.ended = commandLine(a.Command)
		n.mu.Lock()
		if n.sh == sh {
			n.sh, n.lost = nil, oc.died
		}
		n.mu.Unlock()
		// What the dead shell left (its jobs, their escapees) ends with it.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveUpAfter)
		_ = sh.close(cctx)
		cancel()
		_ = n.Machine.ToIf(node.Ready, "", node.Busy)
	} else {
		_ = n.Machine.ToIf(node.Ready, "", node.Busy)
	}
	n.endMu.Unlock()
	oc.fresh = fresh
	res := oc.result()
	n.CallDone(err != nil || res.IsError)

	if err != nil {
		return nil, fmt.Errorf("bash command on node %q cancelled: %w", n.ID(), err)
	}
	return res, nil
}

func (n *Node) notReady() error {
	st, reason := n.Machine.Get()
	return node.NotReady(n.ID(), st, reason)
}

func (n *Node) Info() node.Info {
	info := n.BaseInfo()
	info.Tools = len(n.tools)
	prog, _ := n.shellPath()
	cwd := n.spec.Cwd
	n.mu.Lock()
	sh, lost := n.sh, n.lost
	n.mu.Unlock()
	details := map[string]any{
		"shell":      prog,
		"timeout":    time.Duration(n.opts.Timeout).String(),
		"output_cap": n.opts.OutputCap,
	}
	if sh != nil {
		details["pid"] = sh.pid
		if live := childproc.LiveCwd(sh.pid); live != "" {
			cwd = live
		}
	} else if lost != "" {
		details["shell_ended"] = lost + "; the next call starts a fresh shell"
	}
	if cwd == "" {
		cwd, _ = n.startDir()
	}
	if cwd != "" {
		details["cwd"] = cwd
	}
	info.Summary = filepath.Base(prog) + " in " + cwd
	info.Details = details
	return info
}

// keptOutputs is how many whole outputs of cut calls a node keeps; older
// ones are removed when a new one is written.
const keptOutputs = 20

// spoolDir is where the whole output of a cut call goes: the node's own
// folder, else the system's temporary folder. It prunes the oldest files
// beyond keptOutputs.
func (n *Node) spoolDir() string {
	dir := filepath.Join(os.TempDir(), "nerve-bash-"+strconv.Itoa(os.Getuid()), n.ID())
	if n.env.Dir != "" {
		dir = filepath.Join(n.env.Dir, "output")
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) >= keptOutputs {
		// Names are random; order by time.
		type f struct {
			name string
			mod  time.Time
		}
		var fs []f
		for _, e := range ents {
			if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "output-") {
				fs = append(fs, f{e.Name(), info.ModTime()})
			}
		}
		sort.Slice(fs, func(i, j int) bool { return fs[i].mod.Before(fs[j].mod) })
		for _, x := range fs[:max(0, len(fs)-keptOutputs+1)] {
			os.Remove(filepath.Join(dir, x.name))
		}
	}
	return dir
}
