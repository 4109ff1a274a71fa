// Package all registers every node kind nerve ships with. The daemon and
// the embedded session call Registry; the command line reads CLI (the
// flags and help of `nerve node add KIND`) and Cleanups. Node kinds never
// import it, and nothing else lists the kinds.
package all

import (
	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/kindcli"
	"github.com/nerve-dev/nerve/internal/nodes/bash"
	"github.com/nerve-dev/nerve/internal/nodes/claude"
	"github.com/nerve-dev/nerve/internal/nodes/graph"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Registry returns a new registry with every built-in kind; tokens keeps
// the OAuth sign-ins of mcp nodes (nil: none; the daemon passes the store
// of `nerve node auth`).
func Registry(tokens mcpnode.TokenStore) *session.Registry {
	r := &session.Registry{}
	r.Register(bash.Kind, bash.New)
	r.Register(claude.Kind, claude.New)
	r.Register(graph.Kind, graph.New)
	r.RegisterCheck(graph.Kind, graph.Check)
	r.Register(identity.Kind, identity.New)
	r.Register(llm.Kind, llm.New)
	var mcp *mcpnode.Options
	if tokens != nil {
		mcp = &mcpnode.Options{Tokens: tokens}
	}
	r.Register(mcpnode.Kind, mcpnode.Factory(mcp))
	return r
}

// CLI describes the kinds with flags of their own for the command line,
// in the order of `nerve node add --help`; the other kinds take only
// generic options.
func CLI() []*kindcli.Kind {
	return []*kindcli.Kind{bash.CLI(), mcpnode.CLI(), llm.CLI(), claude.CLI()}
}

// Cleanups are run by the daemon on each session's folder at start: they
// remove what the nodes of a killed daemon left behind (claude nodes'
// config files, the cgroups of every kind's processes).
func Cleanups() []func(dir string) error {
	return []func(string) error{claude.CleanupStale, childproc.SweepStale}
}
