package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// heldNode stands for a saved node that was not built: the daemon died
// while restoring it last time, and building it again might kill the
// daemon again (issue 21). It is in ERROR with the reason, keeps its spec
// (so it stays saved), and Restart builds the real node from the spec.
type heldNode struct {
	node.Base
	reason string
}

func newHeldNode(spec node.Spec, env node.Env, reason string) *heldNode {
	h := &heldNode{reason: reason}
	h.Init(spec, env)
	_ = h.Machine.To(node.Starting, "")
	_ = h.Machine.To(node.Error, reason)
	return h
}

// Start does not build the node: Session.Restart does.
func (h *heldNode) Start(ctx context.Context) error {
	return errors.New(h.reason)
}

func (h *heldNode) Stop(ctx context.Context) error {
	switch h.State() {
	case node.Created, node.Stopped:
		return nil
	}
	if err := h.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	return h.Machine.To(node.Stopped, "")
}

func (h *heldNode) Interrupt(ctx context.Context) error { return nil }

func (h *heldNode) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	st, reason := h.Machine.Get()
	return nil, node.NotReady(h.ID(), st, reason)
}

func (h *heldNode) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	st, reason := h.Machine.Get()
	return nil, node.NotReady(h.ID(), st, reason)
}

func (h *heldNode) Info() node.Info {
	info := h.BaseInfo()
	info.Summary = "not restored"
	info.Details = map[string]any{"held": true}
	return info
}

// Hold adds spec as a node that is not built but held in ERROR with
// reason: the daemon calls it for a saved node whose restore killed it
// last time. The spec stays saved; Restart builds and starts the node.
func (s *Session) Hold(spec node.Spec, reason string) (node.Node, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := node.ValidateID(spec.ID); err != nil {
		return nil, err
	}
	spec = spec.Clone()
	e := &entry{spec: spec}
	e.n = newHeldNode(spec, s.nodeEnv(e, spec.ID), reason)
	s.mu.Lock()
	if _, ok := s.nodes[spec.ID]; ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("node %q: %w", spec.ID, ErrExists)
	}
	s.nodes[spec.ID] = e
	s.order = append(s.order, spec.ID)
	s.mu.Unlock()
	s.dropToolset()
	s.hub.publish(Event{Kind: EventNodeAdded, Node: spec.ID, NodeKind: spec.Kind})
	return e.n, nil
}

// rebuild replaces held node e by the node its spec builds, and starts it.
// A new entry replaces e, so whoever still holds e sees the held node.
func (s *Session) rebuild(ctx context.Context, e *entry) error {
	s.mu.RLock()
	spec := e.spec.Clone()
	s.mu.RUnlock()
	id := spec.ID
	ne := &entry{spec: spec}
	ne.client.set(clientEnv(ctx))
	n, err := s.registry.Build(spec, s.nodeEnv(ne, id))
	if err != nil {
		return fmt.Errorf("building node %q: %w", id, err)
	}
	ne.n = n
	ne.prime()
	if err := e.n.Stop(ctx); err != nil {
		return fmt.Errorf("stopping node %q: %w", id, err)
	}
	s.mu.Lock()
	if s.nodes[id] != e {
		s.mu.Unlock()
		return fmt.Errorf("node %q changed while it was restarted: %w", id, ErrExists)
	}
	s.nodes[id] = ne
	s.mu.Unlock()
	s.dropToolset()
	if err := n.Start(ctx); err != nil {
		return fmt.Errorf("starting node %q: %w", id, err)
	}
	return nil
}
