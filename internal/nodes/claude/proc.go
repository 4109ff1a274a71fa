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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxLine bounds one stream-json line; a longer one ends the process (a
// tool result of this size is not a conversation any more).
const maxLine = 64 << 20

// proc is one Claude Code process in stream-json mode: a child in its own
// process group whose stdout lines are events, control responses and
// control requests.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File
	stderr *ring

	// wmu serialises writes to stdin, one JSON line at a time.
	wmu sync.Mutex

	events *queue

	// ctrlMu guards the fields below.
	ctrlMu  sync.Mutex
	nextReq int
	pending map[string]chan ctrlResult

	exited   chan struct{} // closed once the child is reaped and stdout drained
	exitErr  error         // how it ended; set before exited closes
	stopOnce sync.Once
}

type ctrlResult struct {
	resp json.RawMessage
	err  error
}

// startProc starts argv with env in dir. It returns once the child runs;
// the handshake is the caller's.
func startProc(argv, env []string, dir string) (*proc, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("working folder %q does not exist or is not a folder: fix the node's cwd", dir)
		}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir, SysProcAttr: sysProcAttr()}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	err = cmd.Start()
	closeAll(stdinR, stdoutW, stderrW) // the child holds its own copies
	if err != nil {
		closeAll(stdinW, stdoutR, stderrR)
		return nil, startError(argv[0], path, err)
	}
	p := &proc{
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		stdin:   stdinW,
		stderr:  newRing(stderrLines),
		events:  newQueue(),
		pending: map[string]chan ctrlResult{},
		exited:  make(chan struct{}),
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		defer stderrR.Close()
		p.stderr.readLines(stderrR)
	}()
	readDone := make(chan error, 1)
	go func() {
		defer stdoutR.Close()
		readDone <- p.read(stdoutR)
	}()
	go func() {
		werr := cmd.Wait()
		rerr := <-readDone
		// A grandchild may hold stderr open; do not wait for it forever.
		select {
		case <-stderrDone:
		case <-time.After(time.Second):
		}
		if rerr != nil {
			werr = rerr
		}
		p.exitErr = werr
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

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

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
		p.stderr.add("stdout: " + truncate(string(line), maxStderrLine))
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
	if _, err := p.stdin.Write(b); err != nil {
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
// wait, SIGTERM, wait, SIGKILL — signalling the whole process group. It is
// safe to call many times and concurrently; every call returns once the
// child is gone.
func (p *proc) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.wmu.Lock()
		p.stdin.Close()
		p.wmu.Unlock()
		if !waitFor(p.exited, grace) {
			p.signal(syscall.SIGTERM)
			if !waitFor(p.exited, grace) {
				p.signal(syscall.SIGKILL)
			}
		}
		<-p.exited
		// Whatever of the group is left (MCP servers Claude started).
		p.signal(syscall.SIGKILL)
	})
	<-p.exited
}

// kill ends the group at once (a runaway child); stop still reaps it.
func (p *proc) kill() { p.signal(syscall.SIGKILL) }

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
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if p.exitErr != nil {
		return p.exitErr.Error()
	}
	return "exit status 0"
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

// lookPath finds file like exec.LookPath, but in the PATH of the child's
// environment.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		st, err := os.Stat(file)
		switch {
		case err != nil:
			return "", fmt.Errorf("%w: command %q not found (check the path)", errNotInstalled, file)
		case st.IsDir() || st.Mode()&0o111 == 0:
			return "", fmt.Errorf("command %q is not an executable program: give the path of claude", file)
		}
		return file, nil
	}
	pathEnv := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: command %q not found on PATH", errNotInstalled, file)
}

// errNotInstalled marks a command that is not there.
var errNotInstalled = errors.New("Claude Code is not installed")

func startError(name, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("command %q (%s) cannot be run: permission denied (chmod +x %s)", name, path, path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("command %q (%s) cannot be started: %v (is its interpreter, the #! line, installed?)", name, path, err)
	}
	return fmt.Errorf("starting %q: %w", name, err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
