package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Check runs the check its kind registered (Registry.RegisterCheck) on
// spec against the session's other nodes: a graph's calls must exist, fit
// their tools' schemas and form no cycle. A kind without a check passes.
// It returns the check's warnings; its error lists every mistake.
func (s *Session) Check(ctx context.Context, spec node.Spec) ([]string, error) {
	c := s.registry.check(spec.Kind)
	if c == nil {
		return nil, nil
	}
	return c(ctx, spec, s.catalogue(ctx, spec.ID))
}

// catalogue is what a spec for node skip is checked against: the tools of
// every other node whatever its state (as the session's toolset lists
// them), the nodes that never listed any with their state, and the other
// nodes' specs. It waits for no node: one that is starting without a
// catalogue is down.
func (s *Session) catalogue(ctx context.Context, skip string) *node.Catalogue {
	c := &node.Catalogue{Tools: map[string]*mcp.Tool{}, Down: map[string]string{}, Specs: map[string]node.Spec{}}
	s.mu.RLock()
	var others []*entry
	for _, id := range s.order {
		if e := s.nodes[id]; id != skip && e.n != nil {
			others = append(others, e)
			c.Specs[id] = e.spec.Clone()
		}
	}
	s.mu.RUnlock()
	for _, e := range others {
		id := e.n.ID()
		tools, err := s.listed(ctx, e)
		if err != nil {
			c.Down[id] = err.Error()
			if info := s.info(e); info.State != node.Ready && info.State != node.Busy {
				c.Down[id] = node.NotReady(id, info.State, info.Error).Error()
			}
			continue
		}
		for _, t := range tools {
			c.Tools[node.QualifiedName(id, t.Name)] = t
		}
	}
	return c
}

// Replace puts a node built from spec in the place of node spec.ID, in one
// step: the session's saved specs go from the old spec to the new one in
// one save (atomic, with the daemon's store), so a process killed at any
// moment comes back with one or the other, never neither. A spec its
// factory refuses changes nothing. Once the new node holds the place, the
// old one is stopped and the new one started (unless spec.Stopped, or it
// starts lazily); requests meanwhile wait for that start. A node whose
// start fails stays in ERROR, as after Add. Replace does not run Check.
// A spec without overrides keeps the node's (SetOverride).
func (s *Session) Replace(ctx context.Context, spec node.Spec) (node.Node, error) {
	return s.ReplaceIf(ctx, spec, nil)
}

// SpecTag is the version tag of a saved spec, a strong HTTP entity tag
// (with its quotes): the first 16 hex digits of the SHA-256 of the spec's
// JSON. Two specs with the same saved JSON have the same tag.
func SpecTag(spec node.Spec) string {
	data, err := json.Marshal(spec)
	if err != nil {
		// Only Options or State that are not JSON fail, and a spec's
		// were decoded from JSON: tag the error rather than panic.
		data = []byte(err.Error())
	}
	sum := sha256.Sum256(data)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// ReplaceIf is Replace when node spec.ID's spec still has one of the tags
// in ifMatch (SpecTag; an HTTP If-Match list, compared strongly): the
// check and the swap are one step under the session's lock, so of two
// callers that read the same spec, the second gets ErrChanged and changes
// nothing. An empty ifMatch checks nothing, as Replace.
func (s *Session) ReplaceIf(ctx context.Context, spec node.Spec, ifMatch []string) (node.Node, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	old, err := s.entry(spec.ID)
	if err != nil {
		return nil, err
	}
	// A stale tag fails before the build; matchLocked decides.
	s.mu.RLock()
	err = s.matchLocked(spec.ID, old, ifMatch)
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	spec = spec.Clone()
	if spec.Overrides == nil {
		// A definition sent again (`nerve graph edit`) keeps the tools'
		// overrides, set apart from it (`nerve tool override`).
		spec.Overrides = s.overridesOf(old) // replaced, never changed: shared
	}
	id := spec.ID
	e := &entry{spec: spec}
	e.pending.Store(true)
	e.stopped.Store(spec.Stopped)
	e.client.set(clientEnv(ctx))
	n, err := s.registry.Build(spec, s.nodeEnv(e, id))
	if err != nil {
		return nil, err
	}
	e.n = n
	e.prime()
	s.mu.Lock()
	if err := s.matchLocked(id, old, ifMatch); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.nodes[id] = e
	s.mu.Unlock()
	s.dropToolset()
	if err := s.persist(); err != nil {
		s.log.Error("saving specs", zap.Error(err))
	}
	s.hub.publish(Event{Kind: EventNodeRemoved, Node: id})
	s.hub.publish(Event{Kind: EventNodeAdded, Node: id, NodeKind: spec.Kind})
	var errs []error
	if err := old.n.Stop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the replaced node %q: %w", id, err))
	}
	if err := s.startPending(ctx, e); err != nil {
		errs = append(errs, fmt.Errorf("starting node %q: %w", id, err))
	}
	return n, errors.Join(errs...)
}

// matchLocked says whether node id may be replaced: its entry is still
// old and, with ifMatch, its spec's tag is one of ifMatch. s.mu is held.
func (s *Session) matchLocked(id string, old *entry, ifMatch []string) error {
	syncs.AssertRLocked(&s.mu)
	cur := s.nodes[id]
	if len(ifMatch) > 0 {
		if cur != old || !slices.Contains(ifMatch, SpecTag(cur.spec)) {
			return fmt.Errorf("node %q was %w; run the command again", id, ErrChanged)
		}
		return nil
	}
	if cur != old {
		return fmt.Errorf("node %q changed while it was replaced: %w; try again", id, ErrExists)
	}
	return nil
}
