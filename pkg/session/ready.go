package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// ReadyWait bounds how long a request waits for its node to become able to
// serve it (a start in progress, a stop in progress before a lazy start).
// A node's own start timeout ends a start well before this.
const ReadyWait = 2 * time.Minute

// The waiting rule. Every path that needs a node's server — a call, a
// prompt, a resource read, a completion, one node's tool list — goes
// through await, so that they all agree:
//
//   - READY or BUSY: go on at once.
//   - STARTING or STOPPING: wait for the state to change, then decide again.
//   - CREATED while the session is about to start it (restore, add): wait.
//   - CREATED or STOPPED with a catalogue (node.Lazy): start it, then wait.
//     The start belongs to the node, not to the request that asked first:
//     it runs on the session's goroutine with a context no caller can
//     cancel, and a caller that gives up only stops waiting. A Stop of
//     the node ends the start.
//   - ERROR (but for a node.Reviver whose request reconnects it), or
//     CREATED/STOPPED with nothing that would start it, or held
//     stopped by `nerve node stop`: fail with a message naming the state,
//     the reason and the fix.
//
// With start false (a listing that the catalogue can answer) a lazy node
// is not started: await returns as soon as the node is settled.
//
// A session-wide listing (Toolset: `nerve tools`, an MCP client's
// tools/list, an llm node's tools, a graph's step) waits for no node: a
// node that is starting is listed from what it listed last, so one server
// stuck in its start never holds up a call to another (issue 27). Readiness
// says, without waiting, what a call to a node would meet.

// Ready returns node id once it can serve a request, starting a lazy node
// if it is not running (see await). A caller whose ctx ends stops waiting;
// a start it triggered goes on.
func (s *Session) Ready(ctx context.Context, id string) (node.Node, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	if err := s.await(ctx, e, true); err != nil {
		return nil, err
	}
	return e.n, nil
}

// Settled returns node id once it is not in the middle of a start or a
// stop (nor about to be started by the session). It starts nothing: a lazy
// node that is not running is returned as it is, to answer from its
// catalogue. A node in ERROR is returned without error too; whoever uses
// it reports its state.
func (s *Session) Settled(ctx context.Context, id string) (node.Node, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	if err := s.await(ctx, e, false); err != nil && !errors.Is(err, node.ErrNotReady) {
		return nil, err
	}
	return e.n, nil
}

// stateWatch lets waiters sleep until the node's state changes.
type stateWatch struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced on every change
}

// changed returns a channel closed at the next change of state. Take it
// before reading the state, so that no change is missed.
func (w *stateWatch) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *stateWatch) notify() {
	w.mu.Lock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
	w.mu.Unlock()
}

// await applies the waiting rule to e (see above).
func (s *Session) await(ctx context.Context, e *entry, start bool) error {
	// The common case on every call, without the watch's lock.
	if st := e.n.State(); (st == node.Ready || st == node.Busy) && !e.stopped.Load() {
		return nil
	}
	var deadline <-chan time.Time
	for {
		if e.stopped.Load() {
			if start {
				return heldError(e.n.ID()) // stopped on purpose: never started by a request
			}
			return nil // settled; listings leave it out
		}
		changed := e.watch.changed()
		st, reason := e.n.State(), ""
		switch st {
		case node.Ready, node.Busy:
			return nil
		case node.Error:
			if r, ok := e.n.(node.Reviver); ok && r.Revivable() {
				return nil // the request reconnects it
			}
			return node.NotReady(e.n.ID(), st, e.n.Info().Error)
		case node.Starting, node.Stopping:
			// wait below
		case node.Created, node.Stopped:
			switch {
			case e.pending.Load():
				// The session starts it (restore, add): wait below.
			// The state was read once above: catalogued() would read it
			// again, and a start in between made a waiter fail with
			// "CREATED: not ready" (1 in ~100 runs beside a CPU hog).
			case hasCatalogue(e.n) && start:
				if err := s.launchStart(ctx, e); err != nil {
					return err
				}
			case hasCatalogue(e.n):
				return nil // its catalogue answers
			default:
				if st == node.Created {
					reason = e.n.Info().Error
				}
				return node.NotReady(e.n.ID(), st, reason)
			}
		}
		if deadline == nil {
			t := time.NewTimer(ReadyWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for node %q (%s): %w", e.n.ID(), e.n.State(), context.Cause(ctx))
		case <-deadline:
			return fmt.Errorf("node %q is still %s after %v: %w; see `nerve node info %s`", e.n.ID(), e.n.State(), ReadyWait, node.ErrNotReady, e.n.ID())
		}
	}
}

// launchStart starts e's node on a goroutine of the session unless a start
// it launched is still running. The start keeps ctx's values (the client's
// environment) but not its cancellation. It returns the error of the last
// start it launched when that start failed without moving the node out of
// CREATED or STOPPED, so that a waiter never loops on a start that cannot
// begin.
func (s *Session) launchStart(ctx context.Context, e *entry) error {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.starting {
		return nil
	}
	if err := e.startErr; err != nil {
		e.startErr = nil
		if st := e.n.State(); st == node.Created || st == node.Stopped {
			return err
		}
	}
	s.startsMu.Lock()
	defer s.startsMu.Unlock()
	if s.startsDone {
		return ErrClosed
	}
	e.starting = true
	sctx := context.WithoutCancel(ctx)
	s.starts.Go(func() {
		err := e.n.Start(sctx)
		if err != nil {
			s.log.Warn("starting node for a request", zap.String("node", e.n.ID()), zap.Error(err))
		}
		e.startMu.Lock()
		e.starting = false
		if err != nil {
			if st := e.n.State(); st == node.Created || st == node.Stopped {
				e.startErr = err
			}
		}
		e.startMu.Unlock()
		e.watch.notify() // wake waiters even if the state did not move
	})
	return nil
}

// hasCatalogue reports whether n knows its tools without running
// (node.Lazy), whatever its state.
func hasCatalogue(n node.Node) bool {
	l, ok := n.(node.Lazy)
	return ok && l.Catalogued()
}

// Readiness says what a call to node id meets now, by the waiting rule,
// without waiting or starting anything: "" when the node takes calls at
// once, else a sentence for a person or a model that names its state and
// what happens — the call waits for a start in progress, or starts a node
// that is not running — or, for a node that cannot run now, why and what
// starts it (the words of the call's own error).
func (s *Session) Readiness(id string) (string, error) {
	e, err := s.entry(id)
	if err != nil {
		return "", err
	}
	if e.stopped.Load() {
		return heldError(id).Error(), nil
	}
	st := e.n.State()
	switch st {
	case node.Ready, node.Busy:
		return "", nil
	case node.Starting:
		return fmt.Sprintf("node %q is STARTING: a call waits for its start", id), nil
	case node.Stopping:
		return fmt.Sprintf("node %q is STOPPING: a call waits, then starts it again if it can", id), nil
	case node.Error:
		if r, ok := e.n.(node.Reviver); ok && r.Revivable() {
			return fmt.Sprintf("node %q is ERROR (%s): a call reconnects it", id, e.n.Info().Error), nil
		}
		return node.NotReady(id, st, e.n.Info().Error).Error(), nil
	}
	switch {
	case e.pending.Load():
		return fmt.Sprintf("node %q is STARTING: a call waits for its start", id), nil
	case hasCatalogue(e.n):
		return fmt.Sprintf("node %q is %s, not running: its first call starts it", id, st), nil
	}
	reason := ""
	if st == node.Created {
		reason = e.n.Info().Error
	}
	return node.NotReady(id, st, reason).Error(), nil
}
