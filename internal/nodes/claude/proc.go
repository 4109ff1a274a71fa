package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nerve-dev/nerve/internal/childproc"
)

// maxLine bounds one stream-json line; a longer one ends the process (a
// tool result of this size is not a conversation any more).
const maxLine = 64 << 20

// stderrLines is how many lines of Claude's stderr a node keeps.
const stderrLines = 50

// proc is one Claude Code process in stream-json mode: a child (see
// childproc: its own process group, tied to the daemon's life) whose stdout
// lines are events, control responses and control requests.
type proc struct {
	cp     *childproc.Proc
	pid    int
	stderr *childproc.Ring

	// wmu serialises writes to stdin, one JSON line at a time.
	wmu sync.Mutex

	events *queue

	// ctrlMu guards the fields below.
	ctrlMu  sync.Mutex
	nextReq int
	pending map[string]chan ctrlResult

	exited  chan struct{} // closed once the child is reaped and stdout drained
	readErr error         // why reading stdout failed, if it did; set before exited closes
}

type ctrlResult struct {
	resp json.RawMessage
	err  error
}

// startProc starts argv with env in dir; stop waits grace at each of its
// steps. It returns once the child runs; the handshake is the caller's.
func startProc(argv, env []string, dir string, grace time.Duration) (*proc, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	cp, err := childproc.Start(argv, env, dir, &childproc.Options{StderrLines: stderrLines, StopGrace: grace, TermGrace: grace})
	if err != nil {
		return nil, startError(err)
	}
	p := &proc{
		cp:      cp,
		pid:     cp.Pid(),
		stderr:  cp.Stderr(),
		events:  newQueue(),
		pending: map[string]chan ctrlResult{},
		exited:  make(chan struct{}),
	}
	readDone := make(chan error, 1)
	go func() {
		defer cp.Stdout.Close()
		readDone <- p.read(cp.Stdout)
	}()
	go func() {
		<-cp.Exited()
		p.readErr = <-readDone
		// A grandchild may hold stderr open; do not wait for it forever.
		select {
		case <-cp.StderrDone():
		case <-time.After(time.Second):
		}
		p.ctrlMu.Lock()
		for id, ch := range p.pending {
			ch <- ctrlResult{err: errExited}
			delete(p.pending, id)
		}
		p.ctrlMu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

var (
	errExited  = errors.New("claude exited")
	errRefused = errors.New("claude refused the request")
)

// read dispatches stdout lines until EOF: control responses to their
// waiters, control requests answered at once, everything else queued.
func (p *proc) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			if len(long) > maxLine {
				p.kill()
				io.Copy(io.Discard, br)
				return fmt.Errorf("claude wrote a line longer than %d MB on stdout", maxLine>>20)
			}
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if l := bytes.TrimSpace(line); len(l) > 0 {
			p.dispatch(bytes.Clone(l))
		}
		if err != nil {
			return nil
		}
	}
}

func (p *proc) dispatch(line []byte) {
	var env struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
		Response  struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Response  json.RawMessage `json:"response"`
			Error     string          `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(line, &env) != nil || env.Type == "" {
		// Not a protocol line (a wrapper script talking): keep it for
		// error messages, next to stderr.
		p.stderr.Add("stdout: " + truncate(string(line), childproc.MaxStderrLine))
		return
	}
	switch env.Type {
	case "control_response":
		p.ctrlMu.Lock()
		ch := p.pending[env.Response.RequestID]
		delete(p.pending, env.Response.RequestID)
		p.ctrlMu.Unlock()
		if ch != nil {
			res := ctrlResult{resp: env.Response.Response}
			if env.Response.Subtype == "error" {
				res.err = fmt.Errorf("%w: %s", errRefused, env.Response.Error)
			}
			ch <- res
		}
	case "control_request":
		p.answer(env.RequestID, env.Request)
	case "control_cancel_request", "keep_alive":
	default:
		p.events.push(line)
	}
}

// answer replies to a request Claude makes of its host. Nobody is there to
// answer a permission prompt, so it is denied at once rather than left to
// hang the call; anything else is declined.
func (p *proc) answer(id string, req json.RawMessage) {
	var r struct {
		Subtype  string `json:"subtype"`
		ToolName string `json:"tool_name"`
	}
	json.Unmarshal(req, &r)
	var resp any
	if r.Subtype == "can_use_tool" {
		resp = map[string]any{"subtype": "success", "request_id": id, "response": map[string]any{
			"behavior": "deny",
			"message": fmt.Sprintf("nerve cannot ask a person to allow %s: allow it in Claude's settings "+
				"(permissions.allow) or give the node a --permission-mode", r.ToolName),
		}}
	} else {
		resp = map[string]any{"subtype": "error", "request_id": id,
			"error": fmt.Sprintf("nerve does not answer %q requests", r.Subtype)}
	}
	p.write(map[string]any{"type": "control_response", "response": resp})
}

// write sends one JSON line to the child.
func (p *proc) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.cp.Stdin.Write(b); err != nil {
		return fmt.Errorf("writing to claude: %w", err)
	}
	return nil
}

// control sends a control request and waits for its response.
func (p *proc) control(ctx context.Context, request map[string]any) (json.RawMessage, error) {
	ch := make(chan ctrlResult, 1)
	p.ctrlMu.Lock()
	select {
	case <-p.exited:
		p.ctrlMu.Unlock()
		return nil, errExited
	default:
	}
	p.nextReq++
	id := "nerve-" + strconv.Itoa(p.nextReq)
	p.pending[id] = ch
	p.ctrlMu.Unlock()
	forget := func() {
		p.ctrlMu.Lock()
		delete(p.pending, id)
		p.ctrlMu.Unlock()
	}
	if err := p.write(map[string]any{"type": "control_request", "request_id": id, "request": request}); err != nil {
		forget()
		return nil, err
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// stop ends the child in bounded steps — close stdin (Claude exits on EOF),
// wait, SIGTERM, wait, SIGKILL — signalling the whole process group, Claude
// and the MCP servers it started. It is safe to call many times and
// concurrently; every call returns once the child is gone and its stdout
// drained.
func (p *proc) stop() {
	// Not in the middle of a line.
	p.wmu.Lock()
	p.cp.Stdin.Close()
	p.wmu.Unlock()
	p.cp.Stop(context.Background())
	<-p.exited
}

// kill ends the group at once (a runaway child); stop still reaps it.
func (p *proc) kill() { p.cp.Kill() }

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// exitText describes how the child ended, for people.
func (p *proc) exitText() string {
	if p.readErr != nil {
		return p.readErr.Error()
	}
	st := p.cp.ExitState()
	if st == nil {
		return "exited"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", st.ExitCode())
}

// queue is an unbounded FIFO of event lines with a wake-up channel, so the
// stdout reader never blocks on a slow consumer.
type queue struct {
	mu     sync.Mutex // guards items
	items  [][]byte
	notify chan struct{}
}

func newQueue() *queue { return &queue{notify: make(chan struct{}, 1)} }

func (q *queue) push(b []byte) {
	q.mu.Lock()
	q.items = append(q.items, b)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// drain returns every queued line.
func (q *queue) drain() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// errNotInstalled marks a command that is not there.
var errNotInstalled = errors.New("Claude Code is not installed")

// startError words why childproc.Start failed the way a claude node says it.
func startError(err error) error {
	var e *childproc.Error
	if !errors.As(err, &e) {
		return err
	}
	switch {
	case e.Reason == childproc.NotFound && !e.Searched():
		return fmt.Errorf("%w: command %q not found (check the path)", errNotInstalled, e.Name)
	case e.Reason == childproc.NotFound, e.Reason == childproc.NotExecutable && e.Searched():
		// A file on PATH that cannot run is not Claude Code being there.
		return fmt.Errorf("%w: command %q not found on PATH", errNotInstalled, e.Name)
	case e.Reason == childproc.IsDir, e.Reason == childproc.NotExecutable:
		return fmt.Errorf("command %q is not an executable program: give the path of claude", e.Name)
	case e.Reason != childproc.StartFailed:
		return e
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("command %q (%s) cannot be run: permission denied (chmod +x %s)", e.Name, e.Path, e.Path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("command %q (%s) cannot be started: %v (is its interpreter, the #! line, installed?)", e.Name, e.Path, e.Err)
	}
	return fmt.Errorf("starting %q: %w", e.Name, e.Err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
