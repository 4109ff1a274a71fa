// Package all registers every node kind nerve ships with. The daemon and
// the embedded session call Registry; node kinds never import it.
package all

import (
	"github.com/nerve-dev/nerve/internal/nodes/bash"
	"github.com/nerve-dev/nerve/internal/nodes/claude"
	"github.com/nerve-dev/nerve/internal/nodes/graph"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Registry returns a new registry with every built-in kind, the mcp kind
// with mcp's options (nil: none; the daemon passes the token store that
// keeps OAuth sign-ins).
func Registry(mcp *mcpnode.Options) *session.Registry {
	r := &session.Registry{}
	r.Register(bash.Kind, bash.New)
	r.Register(claude.Kind, claude.New)
	r.Register(graph.Kind, graph.New)
	r.RegisterCheck(graph.Kind, graph.Check)
	r.Register(identity.Kind, identity.New)
	r.Register(llm.Kind, llm.New)
	r.Register(mcpnode.Kind, mcpnode.Factory(mcp))
	return r
}
