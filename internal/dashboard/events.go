package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// The event stream (GET /ui/api/sessions/{s}/events, server-sent events)
// is all the page learns after it loaded: a snapshot, then what changes,
// as it happens. Nothing polls. Its events:
//
//	nodes         [nodeView]   every node, first and after the stream lost events
//	node          nodeView     a node whose state, tools or calls changed
//	node_removed  {id}
//	calls         [Call]       the recent calls, first and after lost events
//	call          Call         a call that ended (Options: Called)
//	run           runView      a graph run's record, whenever it changed while it ran
//	signin        signInResult a sign-in started on the page ended
//	approvals     [prompt]     the calls waiting for a person, first and after lost events
//	approval      prompt       a call the policy holds for a person (approve.go)
//	approval_closed promptClosed  it was answered (here or elsewhere) or stopped waiting
//	closed        {}           the session went away
//
// A graph run's record is read again (RunRecord) after each batch of the
// session's events while its graph has calls in flight, and once more
// settleAfter later: a step starting or ending is a call of the session,
// and the run records the step's end just after its call's event.

const (
	// settleAfter is when the runs going on are read again after a
	// batch of the session's events.
	settleAfter = 50 * time.Millisecond
	// maxRecent is how many calls per session the dashboard keeps to
	// show a page that opens.
	maxRecent = 200
	// maxArgs and maxResult are how much of a call's arguments and
	// result text the call log shows.
	maxArgs   = 1024
	maxResult = 300
)

// Call is one call as the page's call log shows it.
type Call struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Node string    `json:"node"`
	Tool string    `json:"tool"`
	// Caller is who called, as `nerve log` shows it ("cli",
	// "mcp:claude-code", "graph:g/step").
	Caller  string  `json:"caller,omitempty"`
	Run     string  `json:"run,omitempty"`
	MS      float64 `json:"ms"`
	IsError bool    `json:"is_error,omitempty"`
	Error   string  `json:"error,omitempty"`
	Args    string  `json:"args,omitempty"`
	Result  string  `json:"result,omitempty"`
}

// Called tells the dashboard of a call of session name that ended; the
// daemon calls it from session.Options.OnCall, beside the call log.
func (d *Dashboard) Called(name string, c *session.CallInfo) {
	call := Call{
		Time: c.Start, Node: c.Node, Tool: c.Tool, Run: c.Caller.Run,
		MS:   float64(c.Duration.Microseconds()) / 1000,
		Args: cut(string(c.Arguments), maxArgs),
	}
	if c.Caller.Kind != "" {
		call.Caller = c.Caller.String()
	}
	if c.Err != nil {
		call.Error = c.Err.Error()
	} else if c.Result != nil {
		call.IsError = c.Result.IsError
		call.Result = cut(node.ResultText(c.Result, maxResult*2), maxResult)
	}
	d.calls.record(name, call)
}

// cut keeps at most n bytes of s, on a UTF-8 boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// message is one event for the streams of a session.
type message struct {
	event string
	data  any
}

// listener is one event stream's queue of messages.
type listener struct {
	session string
	c       chan message
	// lost: the queue was full and a message dropped; the stream sends
	// the whole call log again.
	lost atomic.Bool
}

// callBus keeps each session's recent calls and tells the event streams
// of new ones, and of the other things that happen outside the session
// (a sign-in's end). It never blocks the caller: a stream that falls
// behind loses messages and is told.
type callBus struct {
	// mu guards the fields below.
	mu     sync.Mutex
	seq    uint64
	recent map[string]*ring
	subs   map[*listener]struct{}
}

func newCallBus() *callBus {
	return &callBus{recent: map[string]*ring{}, subs: map[*listener]struct{}{}}
}

// ring keeps the last maxRecent calls of a session.
type ring struct {
	buf  []Call
	next int // where the next call goes once buf is full
}

func (r *ring) add(c Call) {
	if len(r.buf) < maxRecent {
		r.buf = append(r.buf, c)
		return
	}
	r.buf[r.next] = c
	r.next = (r.next + 1) % maxRecent
}

// all returns the calls, oldest first.
func (r *ring) all() []Call {
	out := make([]Call, 0, len(r.buf))
	return append(append(out, r.buf[r.next:]...), r.buf[:r.next]...)
}

func (b *callBus) record(name string, c Call) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	c.Seq = b.seq
	r := b.recent[name]
	if r == nil {
		r = &ring{}
		b.recent[name] = r
	}
	r.add(c)
	if len(b.subs) > 0 {
		b.deliverLocked(name, message{"call", c})
	}
}

func (b *callBus) notify(name, event string, data any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deliverLocked(name, message{event, data})
}

func (b *callBus) deliverLocked(name string, m message) {
	syncs.AssertLocked(&b.mu)
	for l := range b.subs {
		if l.session != name {
			continue
		}
		select {
		case l.c <- m:
		default:
			l.lost.Store(true)
		}
	}
}

func (b *callBus) snapshot(name string) []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.recent[name]; r != nil {
		return r.all()
	}
	return []Call{}
}

func (b *callBus) listen(name string) *listener {
	l := &listener{session: name, c: make(chan message, 256)}
	b.mu.Lock()
	b.subs[l] = struct{}{}
	b.mu.Unlock()
	return l
}

// listening reports whether a stream of session name is open.
func (b *callBus) listening(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for l := range b.subs {
		if l.session == name {
			return true
		}
	}
	return false
}

func (b *callBus) leave(l *listener) {
	b.mu.Lock()
	delete(b.subs, l)
	b.mu.Unlock()
}

// nodeView is a node as the page shows it: its Info, with its graph runs
// listed apart and short (the Info's previews of every step stay out).
type nodeView struct {
	node.Info
	// SignIn says the node signs in with OAuth: the page offers it.
	SignIn bool         `json:"signin,omitempty"`
	Runs   []runSummary `json:"runs,omitempty"`
}

// runSummary is a graph run in a node's list of runs.
type runSummary struct {
	ID      string    `json:"id"`
	State   string    `json:"state"`
	Started time.Time `json:"started"`
	MS      float64   `json:"ms"`
	Error   string    `json:"error,omitempty"`
}

func (d *Dashboard) view(s *session.Session, info node.Info) nodeView {
	v := nodeView{Info: info}
	if runs, ok := info.Details["runs"]; ok {
		// A graph's Info (its runStore's summaries): decoded as JSON,
		// the dashboard does not import the graph kind.
		if b, err := json.Marshal(runs); err == nil {
			_ = json.Unmarshal(b, &v.Runs)
		}
		v.Details = maps.Clone(info.Details)
		delete(v.Details, "runs")
	}
	if h := d.opts.Hooks; h.SignIn != nil && h.CanSignIn != nil {
		if spec, err := s.Spec(info.ID); err == nil {
			v.SignIn = h.CanSignIn(spec)
		}
	}
	return v
}

// stream is one page's event stream.
type stream struct {
	d   *Dashboard
	s   *session.Session
	w   http.ResponseWriter
	err error // the first write that failed: the page is gone

	// graphs are the graph nodes that had calls in flight at the last
	// look: their runs are read again after each batch of events.
	graphs map[string]bool
	// sent is the record last sent of each run that was running; steps
	// marks the runs whose steps were sent.
	sent  map[string]json.RawMessage
	steps map[string]bool
}

func (d *Dashboard) handleEvents(w http.ResponseWriter, r *http.Request) error {
	s, err := d.session(r)
	if err != nil {
		return err
	}
	sub := s.Subscribe(1024)
	defer sub.Close()
	l := d.calls.listen(s.Name())
	defer d.calls.leave(l)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	st := &stream{d: d, s: s, w: w, graphs: map[string]bool{}, sent: map[string]json.RawMessage{}, steps: map[string]bool{}}
	fmt.Fprint(w, "retry: 1000\n\n")
	st.snapshot()
	dropped := uint64(0)
	ctx := r.Context()
	// settle re-reads the runs going on once, settleAfter after a batch
	// of events: a step's record is updated after its call ended, so
	// after the event that told of it.
	var settle <-chan time.Time
	for st.err == nil && rc.Flush() == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-d.ctx.Done():
			return nil
		case <-settle:
			settle = nil
			st.update(nil)
		case ev, ok := <-sub.C:
			if !ok {
				st.send("closed", struct{}{}) // the session was closed
				return nil
			}
			changed := map[string]bool{}
			st.note(ev, changed)
			if !st.drain(sub, changed) {
				st.send("closed", struct{}{})
				return nil
			}
			if n := sub.Dropped(); n != dropped {
				dropped = n
				st.snapshot()
				continue
			}
			st.update(changed)
			if len(st.graphs) > 0 && settle == nil {
				settle = time.After(settleAfter)
			}
		case m := <-l.c:
			if l.lost.Swap(false) {
				st.send("calls", d.calls.snapshot(s.Name()))
				st.send("approvals", d.asks.snapshot(s.Name()))
				continue
			}
			st.send(m.event, m.data)
		}
	}
	return nil
}

// drain takes in the events already queued, so that one batch is
// answered once; false: the session was closed.
func (st *stream) drain(sub *session.Subscription, changed map[string]bool) bool {
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return false
			}
			st.note(ev, changed)
		default:
			return true
		}
	}
}

func (st *stream) send(event string, data any) {
	if st.err != nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		st.d.log.Warn("encoding a dashboard event", zap.String("event", event), zap.Error(err))
		return
	}
	_, st.err = fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", event, b)
}

// snapshot sends every node, the recent calls and the runs going on.
func (st *stream) snapshot() {
	infos := st.s.Infos()
	views := make([]nodeView, len(infos))
	for i, info := range infos {
		views[i] = st.d.view(st.s, info)
		st.graphs[info.ID] = st.graphs[info.ID] || st.isGraph(info) && info.InFlight > 0
	}
	st.send("nodes", views)
	st.send("calls", st.d.calls.snapshot(st.s.Name()))
	st.send("approvals", st.d.asks.snapshot(st.s.Name()))
	st.runs(views)
}

// note takes in one event of the session.
func (st *stream) note(ev session.Event, changed map[string]bool) {
	switch {
	case ev.Kind == session.EventNodeRemoved:
		delete(changed, ev.Node)
		delete(st.graphs, ev.Node)
		st.send("node_removed", map[string]string{"id": ev.Node})
	case ev.Node != "":
		changed[ev.Node] = true
	}
}

// update sends the nodes that changed and the records of the runs going
// on.
func (st *stream) update(changed map[string]bool) {
	var views []nodeView
	for id := range changed {
		info, err := st.s.Info(id)
		if err != nil {
			continue // removed meanwhile: node_removed follows
		}
		v := st.d.view(st.s, info)
		st.send("node", v)
		if st.isGraph(info) {
			st.graphs[id] = st.graphs[id] || info.InFlight > 0
		}
		views = append(views, v)
	}
	for id := range st.graphs {
		if !changed[id] {
			if info, err := st.s.Info(id); err == nil {
				views = append(views, st.d.view(st.s, info))
			}
		}
	}
	st.runs(views)
}

func (st *stream) isGraph(info node.Info) bool {
	n, err := st.s.Node(info.ID)
	if err != nil {
		return false
	}
	_, ok := n.(runRecorder)
	return ok
}

// runs sends the record of each run of the graphs in flight that is
// running, or was when last sent, if it changed.
func (st *stream) runs(views []nodeView) {
	for _, v := range views {
		if !st.graphs[v.ID] {
			continue
		}
		for _, r := range v.Runs {
			key := v.ID + "/" + r.ID
			if _, was := st.sent[key]; r.State != "running" && !was {
				continue
			}
			rec, err := st.d.runRecord(st.s, v.ID, r.ID)
			if err != nil || bytes.Equal(rec, st.sent[key]) {
				continue
			}
			rv := runView{Node: v.ID, Record: rec}
			if !st.steps[key] {
				rv.Steps, st.steps[key] = st.d.steps(st.s, v.ID), true
			}
			st.send("run", rv)
			if r.State == "running" {
				st.sent[key] = rec
			} else {
				delete(st.sent, key)
				delete(st.steps, key)
			}
		}
		if v.InFlight == 0 {
			delete(st.graphs, v.ID)
		}
	}
}
