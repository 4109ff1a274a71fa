package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/mcptasks"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// The tasks extension (io.modelcontextprotocol/tasks, SEP-2663), the
// server's half. The Go SDK has none; internal/mcptasks is its wire on the
// SDK's extension hooks (tasks/get, tasks/update and tasks/cancel as
// custom methods), and here a receiving middleware answers tools/call
// with a task (CreateTaskResult, resultType "task"). A client of 2026-07-28 that declares
// the extension in its request's capabilities gets a task for
//
//   - a graph's run, at once: it outlives the client that started it,
//     and a daemon restart (its record is durable, the run is finished
//     from its journal), and stays pollable by its task id;
//   - any other tool of a node that has not answered within taskAfter:
//     a long call. One that answers sooner answers as usual.
//
// The task's questions (a server's elicitation, a graph's ask: gate) are
// its inputRequests while it is input_required, answered by tasks/update.
// Tasks are the session's, not one server's: any URL of the session polls
// them (taskstore.go keeps them, on disk in the session's folder).

// tasksExtension names the extension in capabilities.
const tasksExtension = mcptasks.Extension

// Task statuses.
const (
	taskWorking       = mcptasks.Working
	taskInputRequired = mcptasks.InputRequired
	taskCompleted     = mcptasks.Completed
	taskFailed        = mcptasks.Failed
	taskCancelled     = mcptasks.Cancelled
)

// Task timing.
const (
	// taskAfter is how long a call of a tool other than a graph's may
	// run before its client is answered with a task instead.
	taskAfter = time.Second
	// taskTTL is how long a task is kept from its creation (ttlMs).
	taskTTL = 24 * time.Hour
	// taskPoll is the polling interval suggested to clients.
	taskPoll = 500 * time.Millisecond
)

// taskKey finds a task's own state in the context of its call.
type taskKey struct{}

// taskOf returns the task ctx's call runs as, if any.
func taskOf(ctx context.Context) *task {
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

// taskRecord is a task as kept on disk and answered.
type taskRecord struct {
	ID      string          `json:"taskId"`
	Node    string          `json:"node"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"arguments,omitempty"`
	Graph   bool            `json:"graph,omitempty"`
	Run     string          `json:"run,omitempty"` // a graph's run, once known
	Status  string          `json:"status"`
	Message string          `json:"statusMessage,omitempty"`
	Created time.Time       `json:"createdAt"`
	Updated time.Time       `json:"lastUpdatedAt"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
	Resumed int             `json:"resumed,omitempty"` // daemon restarts it outlived
}

func terminal(status string) bool { return mcptasks.Terminal(status) }

// task is a task of this daemon: its record, its call's cancellation and
// its questions (it is an asker, relay.go).
type task struct {
	store  *taskStore
	cancel context.CancelCauseFunc
	done   chan struct{}
	caps   *mcp.ClientCapabilities // of the request that made it

	// saveMu makes the writes of the record one at a time, each of the
	// record as it is then: the last write has the last state.
	saveMu sync.Mutex

	// mu guards rec and asks.
	mu   sync.Mutex
	rec  taskRecord
	asks []*question
	seq  int
	// asked is signalled when a question comes (capacity 1).
	asked chan struct{}
}

// snapshot returns a copy of the record and the open questions.
func (t *task) snapshot() (taskRecord, mcp.InputRequestMap) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var qs mcp.InputRequestMap
	if t.rec.Status == taskInputRequired && len(t.asks) > 0 {
		qs = make(mcp.InputRequestMap, len(t.asks))
		for _, q := range t.asks {
			qs[q.key] = q.req
		}
	}
	return t.rec, qs
}

// set changes the task's record and saves it when save is set.
func (t *task) set(save bool, change func(r *taskRecord)) {
	t.mu.Lock()
	if terminal(t.rec.Status) {
		t.mu.Unlock()
		return
	}
	change(&t.rec)
	t.rec.Updated = time.Now().UTC()
	t.mu.Unlock()
	if save {
		t.persist()
	}
}

// persist writes the task's record as it is now.
func (t *task) persist() error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	rec, _ := t.snapshot()
	return t.store.save(rec)
}

// observe takes what a task's call reports: a graph's run id (kept, so a
// restart finishes the run) and its progress as the status message.
func (t *task) observe(ev node.CallEvent) {
	switch ev.Kind {
	case node.EventStep:
		var se api.StepEvent
		if json.Unmarshal(ev.Data, &se) == nil && se.Run != "" {
			t.mu.Lock()
			known := t.rec.Run == se.Run
			t.mu.Unlock()
			if !known {
				t.set(true, func(r *taskRecord) { r.Run = se.Run })
			}
		}
		if m := stepMessage(ev); m != "" {
			t.set(false, func(r *taskRecord) { r.Message = m })
		}
	case node.EventProgress:
		if ev.Message != "" {
			t.set(false, func(r *taskRecord) { r.Message = ev.Message })
		}
	}
}

// finish records the call's outcome.
func (t *task) finish(res *mcp.CallToolResult, err error, cause error) {
	t.set(true, func(r *taskRecord) {
		switch {
		case errors.Is(cause, errTaskCancelled):
			r.Status, r.Message = taskCancelled, "cancelled by the client"
		case err != nil:
			r.Status = taskFailed
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			r.Error, r.Message = je, je.Message
		default:
			if res == nil {
				res = &mcp.CallToolResult{Content: []mcp.Content{}}
			}
			b, merr := json.Marshal(res)
			if merr != nil {
				r.Status, r.Error = taskFailed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result cannot be kept: " + merr.Error()}
				return
			}
			r.Status, r.Result, r.Message = taskCompleted, b, ""
		}
	})
}

var errTaskCancelled = errors.New("the task was cancelled (tasks/cancel)")

// ask puts a question to the client through the task: input_required
// until tasks/update answers it.
func (t *task) ask(ctx context.Context, kind string, req mcp.InputRequest) (mcp.InputResponse, error) {
	t.mu.Lock()
	t.seq++
	q := &question{key: fmt.Sprintf("%s-%d", kind, t.seq), req: req, answer: make(chan mcp.InputResponse, 1)}
	t.asks = append(t.asks, q)
	t.mu.Unlock()
	t.set(false, func(r *taskRecord) { r.Status = taskInputRequired })
	select {
	case t.asked <- struct{}{}:
	default:
	}
	defer func() {
		t.mu.Lock()
		t.asks = slices.DeleteFunc(t.asks, func(o *question) bool { return o == q })
		open := len(t.asks)
		t.mu.Unlock()
		if open == 0 {
			t.set(false, func(r *taskRecord) { r.Status = taskWorking })
		}
	}()
	select {
	case r := <-q.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.done:
		return nil, errors.New("the task ended")
	}
}

// answer hands tasks/update's answers to the questions they answer.
func (t *task) answer(answers mcp.InputResponseMap) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, q := range t.asks {
		if r, ok := answers[q.key]; ok {
			if err := fits(q.req, r); err != nil {
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q]: %v", q.key, err)}
			}
		}
	}
	for _, q := range t.asks {
		if r, ok := answers[q.key]; ok {
			select {
			case q.answer <- r:
			default: // answered already
			}
		}
	}
	return nil
}

// Elicit asks the client through the task (asker).
func (t *task) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return askFunc(t.ask).Elicit(ctx, p)
}

// CreateMessage asks the client to sample through the task (asker).
func (t *task) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return askFunc(t.ask).CreateMessage(ctx, p)
}

// taskAttachment passes the requests of the node a task calls to the task.
type taskAttachment struct{ t *task }

func (a taskAttachment) Sample(ctx context.Context, _ string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return a.t.CreateMessage(ctx, req)
}

func (a taskAttachment) Elicit(ctx context.Context, _ string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return a.t.Elicit(ctx, req)
}

func (taskAttachment) ResourceUpdated(string) {}

// wire is the record as the extension's Task.
func (r taskRecord) wire() mcptasks.Task {
	return mcptasks.Task{
		TaskID: r.ID, Status: r.Status, StatusMessage: r.Message,
		CreatedAt: mcptasks.Time(r.Created), LastUpdatedAt: mcptasks.Time(r.Updated),
		TTLMs: taskTTL.Milliseconds(), PollIntervalMs: taskPoll.Milliseconds(),
	}
}

// taskMethods are a server's answers to tasks/get, tasks/update and
// tasks/cancel (mcptasks.Handler): the tasks of its session.
type taskMethods struct{ s *Server }

func (m taskMethods) task(id string) (*task, error) {
	if st := m.s.taskStore(); st != nil {
		if t := st.get(id); t != nil {
			return t, nil
		}
	}
	return nil, mcptasks.ErrUnknown(clip(id, 40), fmt.Sprintf("it never was, or it ended more than %v ago", taskTTL))
}

func (m taskMethods) Get(_ context.Context, id string) (*mcptasks.DetailedTask, error) {
	t, err := m.task(id)
	if err != nil {
		return nil, err
	}
	rec, qs := t.snapshot()
	return &mcptasks.DetailedTask{Task: rec.wire(), Result: rec.Result, Error: rec.Error, InputRequests: qs}, nil
}

func (m taskMethods) Update(_ context.Context, id string, answers mcp.InputResponseMap) error {
	t, err := m.task(id)
	if err != nil {
		return err
	}
	return t.answer(answers)
}

func (m taskMethods) Cancel(_ context.Context, id string) error {
	t, err := m.task(id)
	if err != nil {
		return err
	}
	if rec, _ := t.snapshot(); !terminal(rec.Status) && t.cancel != nil {
		t.cancel(errTaskCancelled)
	}
	return nil
}

// addTasks installs the extension's methods on the server.
func (s *Server) addTasks() {
	if err := mcptasks.Register(s.srv, taskMethods{s}); err != nil {
		panic(err) // a name the SDK took for its own: a programming error
	}
}

// callAsTask answers a tools/call of a 2026-07-28 client that declared the
// extension with a task when the tool is a node's: at once for a graph,
// after taskAfter for another. It reports false for a call it leaves to
// next as usual.
func (s *Server) callAsTask(ctx context.Context, req mcp.Request, next mcp.MethodHandler) (mcp.Result, bool, error) {
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok || p == nil || p.RequestState != "" {
		return nil, false, nil
	}
	sr, ok := req.(interface {
		ProtocolVersion() string
		ClientCapabilities() *mcp.ClientCapabilities
	})
	if !ok || !modernRequest(sr) || !mcptasks.Declared(sr.ClientCapabilities()) {
		return nil, false, nil
	}
	s.syncMu.Lock()
	sv, ok := s.tools[p.Name]
	s.syncMu.Unlock()
	st := s.taskStore()
	if !ok || sv.node == "" || st == nil || taskOf(ctx) != nil {
		return nil, false, nil // a server's own tool, or nested
	}
	graph := s.nodeKind(ctx, sv.node) == "graph"
	now := time.Now().UTC()
	t := st.newTask(taskRecord{ID: rand.Text(), Node: sv.node, Tool: sv.name, Args: p.Arguments, Graph: graph, Status: taskWorking, Created: now, Updated: now})
	t.caps = sr.ClientCapabilities()
	tctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	t.cancel = cancel
	tctx = context.WithValue(tctx, taskKey{}, t)
	// The node's questions reach the task, whichever way they come: its
	// attachment (the latest wins) and as the server's running call.
	ended := s.callStarted(t)
	var detach func()
	if ca, ok := s.b.(CallAttacher); ok {
		detach, _ = ca.AttachFor(tctx, sv.node, taskAttachment{t})
	}
	var res mcp.Result
	var err error
	go func() {
		defer close(t.done)
		defer cancel(nil)
		defer ended()
		if detach != nil {
			defer detach()
		}
		res, err = next(tctx, "tools/call", req)
		ctr, _ := res.(*mcp.CallToolResult)
		if (err != nil || ctr == nil || ctr.IsError) && st.closed() {
			return // stopped with the daemon: taken up at its next start (taskstore.go)
		}
		t.finish(ctr, err, context.Cause(tctx))
	}()
	wait := taskAfter
	if graph {
		wait = 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.done:
		if !graph {
			st.forget(t) // answered in time: never announced
			return res, true, err
		}
	case <-t.asked:
	case <-timer.C:
	case <-ctx.Done():
		cancel(context.Cause(ctx))
		st.forget(t)
		return nil, true, ctx.Err()
	}
	// Durable before it is announced: a tasks/get for it resolves.
	perr := t.persist()
	rec, _ := t.snapshot()
	if perr != nil {
		s.log.Warn("a task is kept in memory only", zap.String("task", rec.ID), zap.Error(perr))
	}
	s.log.Info("a call became a task", zap.String("task", rec.ID), zap.String("node", rec.Node), zap.String("tool", rec.Tool))
	return mcptasks.NewCreateTaskResult(rec.wire()), true, nil
}

// nodeKind is the kind of node id ("" if unknown).
func (s *Server) nodeKind(ctx context.Context, id string) string {
	infos, err := s.b.Nodes(ctx)
	if err != nil {
		return ""
	}
	for _, in := range infos {
		if in.ID == id {
			return in.Kind
		}
	}
	return ""
}
