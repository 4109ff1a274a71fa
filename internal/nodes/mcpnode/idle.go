package mcpnode

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// idleTime is the node's idle option, else the session's (0: never).
func (n *Node) idleTime() time.Duration {
	if d := time.Duration(n.opts.Idle); d > 0 {
		return d
	}
	if n.env.Idle != nil {
		return n.env.Idle()
	}
	return 0
}

// touch restarts the idle clock after a call (option idle, or the
// session's). The clock is one timer for the node's life: Reset and Stop
// are safe from any goroutine, so it needs no lock of its own.
func (n *Node) touch() {
	if d := n.idleTime(); d > 0 {
		n.idle.Reset(d)
	}
}

// stopIdleClock stops the idle clock (the node is stopped on purpose).
func (n *Node) stopIdleClock() {
	n.idle.Stop()
}

// idleStop stops a server that had no call for the idle time, keeping its
// catalogue: the next call starts it again. Never with calls in flight or
// resource subscriptions.
func (n *Node) idleStop() {
	if n.InFlight() > 0 || n.subs.Load() > 0 {
		n.touch()
		return
	}
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.State() != node.Ready || n.InFlight() > 0 || !n.Catalogued() {
		return
	}
	n.log.Info("stopping the idle server", zap.Duration("idle", n.idleTime()))
	if err := n.stopLocked(context.Background()); err != nil {
		n.log.Warn("stopping the idle server", zap.Error(err))
	}
}

// Sync starts the node if it is not running, lists everything its server
// offers into the catalogue, and stops it again if it was not running
// (`nerve node sync`). Such a start negotiates the protocol afresh, as
// the server may have been upgraded since the catalogue was written.
func (n *Node) Sync(ctx context.Context) error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	n.mu.RLock()
	c := n.conn
	n.mu.RUnlock()
	if c != nil && (n.State() == node.Ready || n.State() == node.Busy) {
		if err := n.discover(ctx, c, listTools|listResources|listPrompts); err != nil {
			return fmt.Errorf("syncing node %q: %w", n.ID(), err)
		}
		n.saveCatalog()
		if n.env.OnToolsChanged != nil {
			n.env.OnToolsChanged()
		}
		return nil
	}
	if st := n.State(); st == node.Error {
		_ = n.stopLocked(ctx)
	}
	n.legacy.Store(false)
	n.probeNext.Store(true)
	if err := n.startLocked(ctx); err != nil {
		return fmt.Errorf("syncing node %q: %w", n.ID(), err)
	}
	return n.stopLocked(ctx)
}
