package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// A session's tasks (tasks.go), kept by every MCP server of the session —
// the endpoint's URLs and `nerve mcp serve` alike — in memory and, for a
// session with a folder, in FOLDER/tasks/ID.json: a task is written
// before it is announced and when it ends. When the daemon starts again
// (OpenTasks), a task it left working is taken up: a graph's run is
// finished from its journal (MetaResume) under the same task id; another
// tool's call cannot be, and its task fails saying so.

// maxTasks bounds the tasks a session keeps; past it the oldest that
// ended go first.
const maxTasks = 1024

// taskStore is one session's tasks.
type taskStore struct {
	dir string // "" for a session in memory
	b   Backend
	s   *session.Session
	log *zap.Logger

	mu    sync.Mutex
	tasks map[string]*task

	gone chan struct{} // closed once the session closed and the calls ended
}

// taskStores holds the store of each session in this process.
var taskStores sync.Map // *session.Session → *taskStore

// taskStorer is a backend whose session keeps tasks.
type taskStorer interface {
	tasksOf(log *zap.Logger) *taskStore
}

func (b *SessionBackend) tasksOf(log *zap.Logger) *taskStore { return openTasks(b.s, log) }

// OpenTasks opens session s's tasks, taking up those the daemon left
// working when it stopped: the daemon calls it once it restored the
// session, so that a graph's run goes on without waiting for a client.
func OpenTasks(s *session.Session, log *zap.Logger) { openTasks(s, log) }

func openTasks(s *session.Session, log *zap.Logger) *taskStore {
	if st, ok := taskStores.Load(s); ok {
		return st.(*taskStore)
	}
	if log == nil {
		log = zap.NewNop()
	}
	st := &taskStore{b: NewSessionBackend(s), s: s, log: log.Named("tasks"), tasks: map[string]*task{}, gone: make(chan struct{})}
	if d := s.Dir(); d != "" {
		st.dir = filepath.Join(d, "tasks")
	}
	if prev, loaded := taskStores.LoadOrStore(s, st); loaded {
		return prev.(*taskStore)
	}
	// The store goes with its session: a subscription that keeps no
	// event ends when the session closes; the tasks' calls are stopped
	// then, their records left as they are for the next start.
	sub := s.SubscribeFiltered(1, func(*session.Event) bool { return false })
	go func() {
		for range sub.C {
		}
		taskStores.CompareAndDelete(s, st)
		st.stop()
	}()
	st.load()
	return st
}

// taskStore returns the tasks of the server's session (nil for a backend
// without one).
func (s *Server) taskStore() *taskStore {
	if ts, ok := s.b.(taskStorer); ok {
		return ts.tasksOf(s.log)
	}
	return nil
}

// newTask adds a task of rec, not yet saved.
func (st *taskStore) newTask(rec taskRecord) *task {
	t := &task{store: st, rec: rec, done: make(chan struct{}), asked: make(chan struct{}, 1)}
	st.mu.Lock()
	st.tasks[rec.ID] = t
	st.mu.Unlock()
	st.sweep()
	return t
}

func (st *taskStore) get(id string) *task {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.tasks[id]
}

// forget drops a task that was never announced.
func (st *taskStore) forget(t *task) {
	st.mu.Lock()
	delete(st.tasks, t.rec.ID)
	st.mu.Unlock()
	st.remove(t.rec.ID)
}

// closed reports whether the session is closing: a call that ends then
// was stopped by it, and its task stays as the disk has it, to be taken
// up at the next start.
func (st *taskStore) closed() bool { return st.s.Closed() }

func (st *taskStore) path(id string) string { return filepath.Join(st.dir, id+".json") }

// save writes a task's record (nothing for a session in memory).
func (st *taskStore) save(rec taskRecord) error {
	if st.dir == "" {
		return nil
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return fmt.Errorf("keeping task %s: %w", rec.ID, err)
	}
	b, err := json.Marshal(rec)
	if err == nil {
		err = atomicfile.Write(st.path(rec.ID), b, 0o600)
	}
	if err != nil {
		st.log.Warn("writing a task", zap.String("task", rec.ID), zap.Error(err))
	}
	return err
}

func (st *taskStore) remove(id string) {
	if st.dir != "" {
		_ = os.Remove(st.path(id))
	}
}

// sweep drops the tasks past their ttl, and the oldest that ended past
// maxTasks.
func (st *taskStore) sweep() {
	now := time.Now()
	var gone []string
	st.mu.Lock()
	var ended []*task
	for id, t := range st.tasks {
		rec, _ := t.snapshot()
		switch {
		case now.Sub(rec.Created) > taskTTL && terminal(rec.Status):
			delete(st.tasks, id)
			gone = append(gone, id)
		case terminal(rec.Status):
			ended = append(ended, t)
		}
	}
	for len(st.tasks) > maxTasks && len(ended) > 0 {
		oldest := 0
		for i, t := range ended {
			if t.rec.Created.Before(ended[oldest].rec.Created) {
				oldest = i
			}
		}
		id := ended[oldest].rec.ID
		delete(st.tasks, id)
		gone = append(gone, id)
		ended = append(ended[:oldest], ended[oldest+1:]...)
	}
	st.mu.Unlock()
	for _, id := range gone {
		st.remove(id)
	}
}

// load reads the session's tasks and takes up those left working.
func (st *taskStore) load() {
	if st.dir == "" {
		return
	}
	ents, err := os.ReadDir(st.dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			st.log.Warn("reading the session's tasks", zap.Error(err))
		}
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || atomicfile.IsTemp(name) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(st.dir, name))
		var rec taskRecord
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil || rec.ID+".json" != name {
			st.log.Warn("a task cannot be read: skipped", zap.String("file", name), zap.Error(err))
			continue
		}
		if time.Since(rec.Created) > taskTTL && terminal(rec.Status) {
			st.remove(rec.ID)
			continue
		}
		if terminal(rec.Status) {
			t := st.newTask(rec)
			close(t.done)
			continue
		}
		st.takeUp(rec)
	}
}

// takeUp goes on with a task the daemon left working: a graph's run is
// finished from its journal; another call is lost, and its task fails.
func (st *taskStore) takeUp(rec taskRecord) {
	rec.Resumed++
	rec.Updated = time.Now().UTC()
	if !rec.Graph {
		rec.Status = taskFailed
		rec.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the daemon stopped during the call of %s.%s, which did not finish: call the tool again", rec.Node, rec.Tool)}
		rec.Message = rec.Error.Message
		t := st.newTask(rec)
		close(t.done)
		t.persist()
		return
	}
	rec.Status = taskWorking
	meta := map[string]any{}
	rec.Message = "the daemon restarted: the run starts again"
	if rec.Run != "" {
		meta[api.MetaResume] = rec.Run
		rec.Message = "the daemon restarted: run " + rec.Run + " goes on from its journal"
	}
	t := st.newTask(rec)
	t.persist()
	ctx, cancel := context.WithCancelCause(context.Background())
	t.cancel = cancel
	ctx = context.WithValue(ctx, taskKey{}, t)
	ctx = node.WithCaller(ctx, node.Caller{Kind: node.CallerMCP, Name: "task " + rec.ID, Via: "task"})
	var detach func()
	if ca, ok := st.b.(CallAttacher); ok {
		detach, _ = ca.AttachFor(ctx, rec.Node, taskAttachment{t})
	}
	st.log.Info("taking up a task the daemon left working", zap.String("task", rec.ID), zap.String("node", rec.Node), zap.String("run", rec.Run))
	go func() {
		defer close(t.done)
		defer cancel(nil)
		if detach != nil {
			defer detach()
		}
		res, err := st.b.Call(ctx, rec.Node, rec.Tool, rec.Args, meta, t.observe)
		if (err != nil || res == nil || res.IsError) && st.closed() {
			return // stopped with the daemon again: taken up at its next start
		}
		t.finish(res, err, context.Cause(ctx))
	}()
}

// stop cancels the calls of the tasks still running (the session closed)
// and waits for them to end.
func (st *taskStore) stop() {
	defer close(st.gone)
	st.mu.Lock()
	var running []*task
	for _, t := range st.tasks {
		running = append(running, t)
	}
	st.mu.Unlock()
	for _, t := range running {
		if t.cancel != nil {
			t.cancel(session.ErrClosed)
		}
	}
	for _, t := range running {
		<-t.done
	}
}
