// Package all registers every node kind nerve ships with. The daemon and
// the embedded session call Register; node kinds never import it.
package all

import (
	"github.com/nerve-dev/nerve/internal/nodes/bash"
	"github.com/nerve-dev/nerve/internal/nodes/claude"
	"github.com/nerve-dev/nerve/internal/nodes/graph"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcp"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Register adds every built-in node kind to r.
func Register(r *session.Registry) { RegisterWith(r, nil) }

// RegisterWith is Register with the mcp kind's options (nil: none): the
// daemon passes the token store that keeps OAuth sign-ins.
func RegisterWith(r *session.Registry, mcp *mcpnode.Options) {
	r.Register(bash.Kind, bash.New)
	r.Register(claude.Kind, claude.New)
	r.Register(graph.Kind, graph.New)
	r.RegisterCheck(graph.Kind, graph.Check)
	r.Register(identity.Kind, identity.New)
	r.Register(llm.Kind, llm.New)
	r.Register(mcpnode.Kind, mcpnode.Factory(mcp))
}

// Registry returns a new registry with every built-in kind.
func Registry() *session.Registry { return RegistryWith(nil) }

// RegistryWith is Registry with the mcp kind's options.
func RegistryWith(mcp *mcpnode.Options) *session.Registry {
	r := &session.Registry{}
	RegisterWith(r, mcp)
	return r
}
