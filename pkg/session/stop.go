package session

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Stop stops node id and keeps it stopped until Start (or Restart): the
// node stays in the session with its settings and catalogue, its spec is
// saved with Stopped set so a daemon restart leaves it stopped, its tools
// stay in the session's toolset, and a call to it is refused with the command
// that starts it. Stopping a stopped node is not an error.
func (s *Session) Stop(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	s.setStopped(e, true)
	if err := e.n.Stop(ctx); err != nil {
		return fmt.Errorf("stopping node %q: %w", id, err)
	}
	return nil
}

// Start starts node id, which a Stop (or a spec saved Stopped) held, and
// lets the daemon start it again on restart. Starting a running node is
// not an error.
func (s *Session) Start(ctx context.Context, id string) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	e.client.set(clientEnv(ctx))
	s.setStopped(e, false)
	switch e.n.State() {
	case node.Ready, node.Busy, node.Starting:
		return nil
	case node.Error:
		// Out of ERROR only through STOPPED (as Restart does).
		if err := e.n.Stop(ctx); err != nil {
			return fmt.Errorf("stopping node %q: %w", id, err)
		}
	}
	if err := e.n.Start(ctx); err != nil {
		return fmt.Errorf("starting node %q: %w", id, err)
	}
	return nil
}

// HeldStopped reports whether node id was stopped on purpose (Stop, or a
// spec saved with Stopped) and is to stay so.
func (s *Session) HeldStopped(id string) bool {
	e, err := s.entry(id)
	return err == nil && e.stopped.Load()
}

// setStopped records whether e is held stopped, in the entry and in its
// saved spec, and drops the cached toolset (what a call to its tools
// meets has changed).
func (s *Session) setStopped(e *entry, stopped bool) {
	if e.stopped.Swap(stopped) == stopped {
		return
	}
	s.mu.Lock()
	e.spec.Stopped = stopped
	s.mu.Unlock()
	s.dropToolset()
	if err := s.persist(); err != nil {
		s.log.Error("saving specs", zap.Error(err))
	}
}

// heldError is the error of a call to a node held stopped.
func heldError(id string) error {
	return fmt.Errorf("node %q is STOPPED (stopped with `nerve node stop %s`): %w; start it with `nerve node start %s`", id, id, node.ErrNotReady, id)
}
