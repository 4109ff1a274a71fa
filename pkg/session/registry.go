package session

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Registry maps node kinds to their factories. The zero value is empty and
// ready to use; it is safe for concurrent use.
type Registry struct {
	// mu guards the fields below.
	mu        sync.RWMutex
	factories map[string]node.Factory
	checks    map[string]node.Check
}

// Register adds (or replaces) the factory of kind.
func (r *Registry) Register(kind string, f node.Factory) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.factories == nil {
		r.factories = make(map[string]node.Factory)
	}
	r.factories[kind] = f
}

// RegisterCheck adds (or replaces) the check of kind's specs against the
// session (node.Check), which Session.Check runs.
func (r *Registry) RegisterCheck(kind string, c node.Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checks == nil {
		r.checks = make(map[string]node.Check)
	}
	r.checks[kind] = c
}

func (r *Registry) check(kind string) node.Check {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.checks[kind]
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	kinds := make([]string, 0, len(r.factories))
	for k := range r.factories {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Build makes a node from spec with the factory of spec.Kind.
func (r *Registry) Build(spec node.Spec, env node.Env) (node.Node, error) {
	r.mu.RLock()
	f, ok := r.factories[spec.Kind]
	r.mu.RUnlock()
	if !ok {
		kinds := r.Kinds()
		return nil, fmt.Errorf("unknown node kind %q (known kinds: %s)", spec.Kind, strings.Join(kinds, ", "))
	}
	n, err := f(spec, env)
	if err != nil {
		return nil, fmt.Errorf("building %s node %q: %w", spec.Kind, spec.ID, err)
	}
	return n, nil
}

// Has reports whether kind is registered.
func (r *Registry) Has(kind string) bool {
	return slices.Contains(r.Kinds(), kind)
}
