package mcpnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/node"
)

// ErrTimeout is wrapped by the error of a call that ran out of time.
var ErrTimeout = errors.New("call timed out")

// ErrInterrupted is wrapped by the error of a call cut short by Interrupt.
var ErrInterrupted = errors.New("call interrupted")

var errStopping = errors.New("the node was stopped while the call ran")

// sdkStreamEnded ends the error the Go SDK's streamable client gives a
// call whose event stream ended before its result with no event ID to
// resume it from (streamableClientConn.processStream, v1.8.0); it has no
// sentinel.
const sdkStreamEnded = "request terminated without response"

// call is one tool call in flight.
type call struct {
	req    *node.CallRequest
	ctx    context.Context // the call's own: ended once it is cancelled
	cancel context.CancelCauseFunc
	idle   time.Duration
	capAt  time.Time   // the absolute deadline
	timer  *time.Timer // cancels the call after idle without progress, or at capAt
}

// CallTool calls one of the server's tools. Calls run concurrently; the
// node is BUSY while at least one is in flight. A call is cancelled (and the
// server told so) when ctx ends, on Interrupt, after the node's timeout
// without progress, or at the absolute cap. None of these puts the node in
// ERROR; a connection lost mid-call does, and the call's error says why.
//
// A node that is not running fails with node.ErrNotReady: starting a lazy
// node for its call, and waiting for one that is starting, is the
// session's rule (pkg/session, Session.Ready), which every path shares.
func (n *Node) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := n.revive(ctx); err != nil {
		return nil, err
	}
	res, err := n.callOnce(ctx, req)
	if errors.Is(err, errSessionGone) {
		// The server forgot the session (it restarted) and refused the
		// call without running it: reconnect and send it once more.
		if rerr := n.reconnect(ctx); rerr != nil {
			return nil, fmt.Errorf("tool %q on node %q: the server forgot nerve's session and reconnecting failed: %w", req.Tool, n.ID(), rerr)
		}
		res, err = n.callOnce(ctx, req)
	}
	if askedTheOldWay(res, err) && ctx.Err() == nil && n.speakLegacy(ctx) {
		// A server written for 2025-11-25 asked for input in the middle
		// of the call, which 2026-07-28 forbids, and failed it there;
		// the node now speaks 2025-11-25 and the call is sent once more.
		// A server of 2026-07-28 is made to run a handler again up to
		// where it asks for input (input_required), so the first run
		// did no more than a first round of that would have.
		res, err = n.callOnce(ctx, req)
	}
	n.touch()
	return res, err
}

// revive reconnects a remote (http, sse) node that is ERROR because its
// server was unreachable, so a node recovers when its server comes back. A
// stdio node in ERROR stays there until it is restarted.
func (n *Node) revive(ctx context.Context) error {
	n.mu.RLock()
	ok := n.revivableLocked()
	n.mu.RUnlock()
	if !ok {
		return nil
	}
	if err := n.reconnect(ctx); err != nil {
		return fmt.Errorf("node %q is ERROR and reconnecting failed: %w", n.ID(), err)
	}
	return nil
}

// Revivable reports whether the node is ERROR but its next call
// reconnects it (node.Reviver): a remote server that was down.
func (n *Node) Revivable() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.revivableLocked()
}

var _ node.Reviver = (*Node)(nil)

// revivableLocked reports whether the next call reconnects the node: it is
// remote, ERROR, meant to run, and no restart loop is at work. n.mu is held.
func (n *Node) revivableLocked() bool {
	syncs.AssertRLocked(&n.mu)
	return n.server.URL != "" && n.wantRunning && n.restartCancel == nil && n.State() == node.Error
}

// reconnect replaces a failed connection with a new one, unless another
// caller has done so meanwhile.
func (n *Node) reconnect(ctx context.Context) error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.State() == node.Ready || n.State() == node.Busy {
		n.mu.RLock()
		c := n.conn
		n.mu.RUnlock()
		if c != nil && !c.broken.Load() {
			return nil
		}
	}
	_ = n.stopLocked(ctx)
	return n.startLocked(ctx)
}

func (n *Node) callOnce(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	n.mu.RLock()
	c := n.conn
	_, known := n.toolIndex[req.Tool]
	n.mu.RUnlock()
	if c == nil {
		n.EndCall(true)
		return nil, n.notReady()
	}
	if !known {
		n.EndCall(true)
		return nil, fmt.Errorf("%w %q: node %q has no such tool (list its tools with `nerve call @%s ?`)", node.ErrUnknownTool, req.Tool, n.ID(), n.ID())
	}
	res, err := n.call(ctx, c, req)
	n.EndCall(err != nil || res == nil || res.IsError)
	return res, err
}

func (n *Node) callTimeout() time.Duration {
	if d := time.Duration(n.opts.Timeout); d > 0 {
		return d
	}
	if n.server.Timeout > 0 {
		return n.server.Timeout
	}
	return DefaultCallTimeout
}

func (n *Node) call(ctx context.Context, c *conn, req *node.CallRequest) (*mcp.CallToolResult, error) {
	token := "nerve-" + strconv.FormatInt(n.seq.Add(1), 10)
	idle := n.callTimeout()
	cctx, cancel := context.WithCancelCause(context.WithValue(ctx, callKey{}, token))
	defer cancel(nil)
	// One timer serves both limits: it fires at the idle deadline (moved
	// on by progress) or at the cap, whichever is first.
	cl := &call{req: req, ctx: cctx, cancel: cancel, idle: idle, capAt: time.Now().Add(n.cfg.callCap)}
	callCap := n.cfg.callCap
	cl.timer = time.AfterFunc(min(idle, callCap), func() {
		if !time.Now().Before(cl.capAt) {
			cancel(fmt.Errorf("%w: tool %q ran for %v, nerve's cap for any call; the server was told to cancel it", ErrTimeout, req.Tool, callCap))
			return
		}
		cancel(fmt.Errorf("%w: tool %q sent no result or progress for %v, so nerve cancelled it (raise the node's timeout, e.g. --timeout 5m, if it needs longer)", ErrTimeout, req.Tool, idle))
	})
	n.callsMu.Lock()
	n.calls[token] = cl
	n.callsMu.Unlock()
	defer func() {
		cl.timer.Stop()
		n.callsMu.Lock()
		if cctx.Err() != nil {
			n.cancelled++ // in the step that forgets it (CallsCancelled)
		}
		delete(n.calls, token)
		n.callsMu.Unlock()
	}()

	params := &mcp.CallToolParams{Name: req.Tool}
	if len(req.Arguments) > 0 && string(req.Arguments) != "null" {
		params.Arguments = req.Arguments
	}
	params.SetProgressToken(token)
	if chain := node.CallChain(ctx); len(chain) > 0 {
		// A server that is nerve continues the chain (issue 21).
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[node.ChainMetaKey] = chain
	}
	cctx, span := telemetry.MCPClient(cctx, n.ID(), req.Tool, n.server.URL)
	params.Meta = telemetry.InjectMeta(cctx, params.Meta) // SEP-414; HTTP headers: httpClient
	var res *mcp.CallToolResult
	var err error
	if !isModern(c.cs) && n.needsTask(req.Tool) {
		res, err = callTaskV1(cctx, c.cs, params) // tasks.go
	} else {
		res, err = c.cs.CallTool(cctx, params)
	}
	span.EndCall(res != nil && res.IsError, err) // a task's polling is not under it
	if err == nil {
		if lt, ok := taskOf(res); ok {
			return n.awaitTask(ctx, cctx, c, cl, lt)
		}
		return res, nil
	}
	if cctx.Err() != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("call to %q cancelled (the server was told): %w", req.Tool, context.Cause(ctx))
		}
		return nil, context.Cause(cctx)
	}
	if c.proc == nil {
		if down := serverDown(err); down != "" {
			// The server is down. The node is ERROR until it comes back;
			// the next call reconnects.
			msg := fmt.Sprintf("%s at %s: is the server running? (the next call reconnects)", down, n.server.URL)
			c.broken.Store(true)
			if n.Machine.ToIf(node.Error, msg, node.Ready, node.Busy) == nil {
				n.scheduleRestart(c)
			}
			return nil, fmt.Errorf("tool %q on node %q: %s", req.Tool, n.ID(), msg)
		}
		if strings.HasSuffix(err.Error(), sdkStreamEnded) {
			// The server ended the call's event stream before the result,
			// with no event ID to resume it from (the SDK resumes one that
			// has an ID, with GET and Last-Event-ID): the result is lost.
			// The connection is fine.
			return nil, fmt.Errorf("tool %q on node %q: the server closed the call's event stream before its result without sending an event ID to resume it from, so the result is lost and the tool may have run (check before you repeat it); a server that closes streams mid-call must keep its events for clients to resume (MCP resumability, SEP-1699)", req.Tool, n.ID())
		}
		if errors.Is(err, mcp.ErrSessionMissing) || strings.HasSuffix(err.Error(), ": "+http.StatusText(http.StatusBadRequest)) {
			// 404 for our session id (the spec's way to say the session
			// is gone), or 400 (what servers such as server-everything
			// answer for a session id they do not know): the call was not
			// run.
			c.broken.Store(true)
			return nil, fmt.Errorf("tool %q on node %q: %w: %v", req.Tool, n.ID(), errSessionGone, err)
		}
	}
	var serr *StatusError
	if errors.As(err, &serr) {
		if serr.NotResent {
			// 502 or 504: a gateway got no answer; the call may have run.
			return nil, fmt.Errorf("tool %q on node %q: %w", req.Tool, n.ID(), serr)
		}
		// 429 or 503 after nerve's retries: the call was not run.
		return nil, fmt.Errorf("tool %q on node %q was not run: %w", req.Tool, n.ID(), serr)
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == codeOverLimit {
		// nerve refused the answer (see guard): the connection is fine.
		return nil, fmt.Errorf("tool %q on node %q: %s", req.Tool, n.ID(), werr.Message)
	}
	if errors.As(err, &werr) {
		// The server answered with an error: the connection is fine.
		return nil, fmt.Errorf("tool %q on node %q: the server refused the call: %s", req.Tool, n.ID(), describeRPCError(werr))
	}
	// The connection broke: wait for the watcher to say why.
	t := time.NewTimer(n.cfg.stopGrace + n.cfg.termGrace + time.Second)
	defer t.Stop()
	select {
	case <-c.done:
		if c.fault != nil {
			return nil, fmt.Errorf("tool %q on node %q failed: %w", req.Tool, n.ID(), c.fault)
		}
	case <-t.C:
	}
	return nil, fmt.Errorf("tool %q on node %q: %w", req.Tool, n.ID(), err)
}

// Interrupt cancels every call in flight; the server is told of each with
// notifications/cancelled and the node stays usable.
func (n *Node) Interrupt(ctx context.Context) error {
	n.cancelCalls(ErrInterrupted)
	return nil
}

// CallsCancelled counts the node's calls whose context has ended —
// cancelled by their caller, interrupted, timed out — those still in
// flight included. A call counts from the moment its context ends, which
// is before the server is told (the SDK tells it once the call returns),
// so whoever hears of the server's answer to that — it withdraws what
// the call asked (elicitation) — finds it counted. The count never goes
// down.
func (n *Node) CallsCancelled() int64 {
	n.callsMu.Lock()
	defer n.callsMu.Unlock()
	c := n.cancelled
	for _, cl := range n.calls {
		if cl.ctx.Err() != nil {
			c++
		}
	}
	return c
}

func (n *Node) cancelCalls(cause error) {
	n.callsMu.Lock()
	defer n.callsMu.Unlock()
	for _, cl := range n.calls {
		cl.cancel(cause)
	}
}

// alive is a sign of life of the call's server: progress, or a task
// that answered tasks/get. It moves the idle deadline on, up to the cap.
func (cl *call) alive() {
	cl.timer.Reset(min(cl.idle, time.Until(cl.capAt)))
}

// needsTask reports whether tool must be called as a task of MCP
// 2025-11-25 (its execution.taskSupport is "required").
func (n *Node) needsTask(tool string) bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return taskSupport(n.toolIndex[tool]) == "required"
}

func (n *Node) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params != nil {
		n.progress(req.Params)
	}
}

func (n *Node) progress(p *mcp.ProgressNotificationParams) {
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	n.callsMu.Lock()
	cl := n.calls[tok]
	n.callsMu.Unlock()
	if cl == nil {
		return
	}
	cl.alive() // progress keeps a call alive, up to the cap
	cl.req.Emit(node.CallEvent{Kind: node.EventProgress, Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// onLog passes a server's log message to the observers of the calls in
// flight. MCP log messages name no request, so with several calls in
// flight each of them sees it.
func (n *Node) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	if req.Params != nil {
		n.logMessage(req.Params)
	}
}

func (n *Node) logMessage(p *mcp.LoggingMessageParams) {
	data, err := json.Marshal(p.Data)
	if err != nil {
		data = nil
	}
	n.log.Debug("server log", zap.String("level", string(p.Level)), zap.String("logger", p.Logger), zap.ByteString("data", data))
	ev := node.CallEvent{Kind: node.EventLog, Level: string(p.Level), Logger: p.Logger, Data: data}
	if s, ok := p.Data.(string); ok {
		ev.Text = s
	}
	n.callsMu.Lock()
	observers := make([]*node.CallRequest, 0, len(n.calls))
	for _, cl := range n.calls {
		observers = append(observers, cl.req)
	}
	n.callsMu.Unlock()
	for _, r := range observers {
		r.Emit(ev)
	}
}

// serverDown says how an HTTP request found the server gone — "connection
// refused", or the connection reset or closed by a server that is dying —
// or "" when err is something else.
func serverDown(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, errConnRefused):
		return "connection refused"
	case errors.Is(err, errConnReset), errors.Is(err, syscall.EPIPE):
		return "the connection was reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	case errors.As(err, &op):
		return "the connection failed (" + op.Err.Error() + ")"
	}
	return ""
}
