package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/sendq"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// callStream writes a call's lines. The status line is held back until
// the first event, so a call that cannot be made at all (no such node,
// bad arguments) still gets a proper HTTP status.
//
// Events come from the node's delivery goroutine, which must never wait
// for a client (a client suspended with Ctrl-Z stops reading its socket;
// a write to it blocks until it reads again, and the node's every other
// call would wait behind it). So send only queues the line: the call's
// own queue (internal/sendq) writes it, and drops what does not fit while
// the client does not read. The last line is written by the handler
// itself, after the queue is drained: it always arrives (docs/daemon.md,
// "A client that stops reading").
type callStream struct {
	w http.ResponseWriter
	// mu guards the fields below: observers may run on any goroutine. It
	// is never held while writing to w.
	mu    sync.Mutex
	q     *sendq.Queue[[]byte] // made by the first event
	ended bool

	// started: w has its status line. Only the writer of w touches it:
	// the queue's goroutine while the call runs, the handler once the
	// queue is closed.
	started bool
}

// callQueueBytes bounds the lines queued for one caller that does not
// read (some 2,000 progress lines); beyond it they are dropped.
var callQueueBytes = 256 << 10

func (cs *callStream) start() {
	if cs.started {
		return
	}
	cs.started = true
	cs.w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	cs.w.WriteHeader(http.StatusOK)
}

// send queues a line; it never waits for the client.
func (cs *callStream) send(line *api.CallLine) {
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.ended {
		return
	}
	if cs.q == nil {
		cs.q = sendq.New(callQueueBytes, cs.write)
	}
	cs.q.Push(b, len(b))
}

// write writes a batch of queued lines (on the queue's goroutine), each
// after a line saying how many were dropped before it, if any were.
func (cs *callStream) write(batch []sendq.Item[[]byte]) {
	cs.start()
	for _, it := range batch {
		if it.Lost > 0 {
			cs.writeSkipped(it.Lost)
		}
		if _, err := cs.w.Write(it.Value); err != nil {
			return // the client is gone; the handler ends with the call
		}
	}
	flush(cs.w)
}

// writeSkipped tells the client that n events were dropped while it did
// not read: a warning log line, which `nerve call` and the REPL show.
func (cs *callStream) writeSkipped(n int) {
	msg := fmt.Sprintf("nerve skipped %d events of this call: its client did not read them in time (was it suspended?)", n)
	data, _ := json.Marshal(msg)
	b, _ := json.Marshal(&api.CallLine{CallEvent: node.CallEvent{Kind: api.EventLog, Level: "warning", Logger: "nerve", Text: msg, Data: data}, Skipped: n})
	_, _ = cs.w.Write(append(b, '\n'))
}

// finish stops taking events and waits until the queued ones are
// written; the caller then owns w.
func (cs *callStream) finish() {
	cs.mu.Lock()
	cs.ended = true
	q := cs.q
	cs.mu.Unlock()
	if q == nil {
		return
	}
	if lost := q.Close(); lost > 0 {
		cs.writeSkipped(lost)
	}
}

// end writes the last line: the result, or the error (as a status when
// nothing was streamed yet).
func (cs *callStream) end(res *mcp.CallToolResult, err error, took time.Duration) {
	cs.finish()
	if err != nil {
		status, e := apiError(nodeFailed(err, api.CodeCallFailed, nil, ""))
		if !cs.started {
			writeError(cs.w, status, e)
			return
		}
		_ = json.NewEncoder(cs.w).Encode(&api.CallLine{CallEvent: node.CallEvent{Kind: api.LineError}, Error: &e, Duration: took})
		return
	}
	cs.start()
	_ = json.NewEncoder(cs.w).Encode(&resultLine{CallLine: api.CallLine{CallEvent: node.CallEvent{Kind: api.LineResult}, Duration: took}, MCPResult: res})
}

// resultLine is api.CallLine with the result as the node's
// *mcp.CallToolResult: the shallower field writes the "result" key,
// without encoding the result twice.
type resultLine struct {
	api.CallLine
	MCPResult *mcp.CallToolResult `json:"result,omitempty"`
}

// parseLine parses a call line (api.CallRequest.Line) against node id's
// tools with the Commander's parser, as `nerve call` did before it sent
// the line: the tool and arguments of a line that is a call of node id,
// or no tool and the node's tools for any other line, which the client
// parses to tell the person what is wrong.
func parseLine(r *http.Request, s *session.Session, id, line string) (tool string, args json.RawMessage, tools []*mcp.Tool, err error) {
	tools, err = s.Tools(r.Context(), id)
	if err != nil {
		return "", nil, nil, err
	}
	ln, err := commander.Parse(line, commander.NewIndex(map[string][]*mcp.Tool{id: tools}), nil)
	if err != nil || ln.Kind != commander.Call || ln.Node != id {
		return "", nil, tools, nil
	}
	return ln.Tool, ln.Args, tools, nil
}

// sendTools ends a call line that is not a call with the node's tools.
func (cs *callStream) sendTools(tools []*mcp.Tool) {
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	cs.finish()
	cs.start()
	_ = json.NewEncoder(cs.w).Encode(&toolsLine{CallLine: api.CallLine{CallEvent: node.CallEvent{Kind: api.LineTools}}, MCPTools: tools})
}

// toolsLine is api.CallLine with the node's tools as they are (the
// shallower field writes the "tools" key).
type toolsLine struct {
	api.CallLine
	MCPTools []*mcp.Tool `json:"tools"`
}

func (d *Daemon) handleCall(w http.ResponseWriter, r *http.Request) {
	var req api.CallRequest
	if err := readJSON(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	sessName, id := r.PathValue("session"), r.PathValue("node")
	s, err := d.sessionOf(r, false)
	if err != nil {
		writeErr(w, err)
		return
	}
	cs := &callStream{w: w}
	if req.Line != "" {
		var tools []*mcp.Tool
		if req.Tool, req.Arguments, tools, err = parseLine(r, s, id, req.Line); err != nil {
			cs.end(nil, err, 0)
			return
		}
		if req.Tool == "" {
			// A node that is not running: say what its tools are worth
			// before them (commander.NodeNote), as a state line.
			if info, err := s.Info(id); err == nil && commander.NodeNote(info) != "" {
				cs.send(&api.CallLine{CallEvent: node.CallEvent{Kind: api.LineState}, To: info.State.String(), Reason: commander.NodeNote(info)})
			}
			cs.sendTools(tools)
			return
		}
	}
	ctx, span := telemetry.HTTPServer(r, sessName) // the command line's trace goes on
	ctx = node.WithCaller(ctx, callerOf(r))

	// Tell the caller if the node fails or stops during the call.
	h := d.held(sessName)
	if h != nil {
		h.watchCall(id, cs)
		defer h.unwatchCall(id, cs)
	}

	// The session logs the call (calllog.go), as it does every other.
	start := time.Now()
	res, err := s.Call(ctx, id, &node.CallRequest{
		Tool:      req.Tool,
		Arguments: req.Arguments,
		Meta:      req.Meta,
		Observe: func(ev node.CallEvent) {
			cs.send(&api.CallLine{CallEvent: ev})
		},
	})
	took := time.Since(start)
	span.End(err)
	if err == nil && res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	cs.end(res, err, took)
}

// callerOf is the caller a call request names (api.HeaderCaller).
func callerOf(r *http.Request) node.Caller {
	switch v := r.Header.Get(api.HeaderCaller); v {
	case "":
		return node.Caller{Kind: node.CallerAPI}
	case node.CallerCLI, node.CallerREPL:
		return node.Caller{Kind: v}
	default:
		return node.Caller{Kind: node.CallerAPI, Name: v}
	}
}

// notableState says whether a node's move to state to is news for a
// caller whose call is running: READY ⇄ BUSY is the call itself.
func notableState(to string) bool {
	return to != node.Busy.String() && to != node.Ready.String()
}

// watchCall routes node id's state changes to cs while its call runs. One
// subscription per session serves every call: a subscription per call
// would cost each call a buffer and every event a send per call in flight.
func (h *held) watchCall(id string, cs *callStream) {
	h.callMu.Lock()
	defer h.callMu.Unlock()
	if h.calls == nil {
		h.calls = make(map[string]map[*callStream]struct{})
		// Only the state changes a caller must hear of: the routine
		// READY ⇄ BUSY of every call wakes no one.
		sub := h.s.SubscribeFiltered(256, func(ev *session.Event) bool {
			return ev.Kind == session.EventState && notableState(ev.To)
		})
		// The goroutine ends when the session closes (and closes sub.C).
		go h.routeStates(sub)
	}
	m := h.calls[id]
	if m == nil {
		m = make(map[*callStream]struct{})
		h.calls[id] = m
	}
	m[cs] = struct{}{}
}

func (h *held) unwatchCall(id string, cs *callStream) {
	h.callMu.Lock()
	defer h.callMu.Unlock()
	delete(h.calls[id], cs)
	if len(h.calls[id]) == 0 {
		delete(h.calls, id)
	}
}

func (h *held) routeStates(sub *session.Subscription) {
	for ev := range sub.C {
		if ev.Kind != session.EventState || !notableState(ev.To) {
			continue
		}
		h.callMu.Lock()
		streams := make([]*callStream, 0, len(h.calls[ev.Node]))
		for cs := range h.calls[ev.Node] {
			streams = append(streams, cs)
		}
		h.callMu.Unlock()
		for _, cs := range streams {
			cs.send(&api.CallLine{CallEvent: node.CallEvent{Kind: api.LineState}, From: ev.From, To: ev.To, Reason: ev.Reason})
		}
	}
}
