package node

import (
	"context"
	"strings"
)

// Kinds of Caller.
const (
	CallerCLI   = "cli"   // a `nerve call` command
	CallerREPL  = "repl"  // the Commander REPL
	CallerAPI   = "api"   // another program on the local API
	CallerMCP   = "mcp"   // an MCP client of `nerve mcp serve` or the HTTP endpoint
	CallerGraph = "graph" // a step of a graph run
	CallerLLM   = "llm"   // an llm node's agent loop
)

// Caller says who made a call: the call log records it, so `nerve log`
// answers "what did the agent do" (issue 22, item 9). It travels in the
// call's context (WithCaller); the innermost caller wins, so a graph's
// steps are the graph's calls, not the CLI's that ran the graph.
type Caller struct {
	// Kind is one of the Caller* constants.
	Kind string `json:"kind"`
	// Name is the MCP client's name (its initialize clientInfo), or the
	// graph or llm node that called.
	Name string `json:"name,omitempty"`
	// Via is how an MCP client came: "stdio" (`nerve mcp serve`) or
	// "http" (the endpoint).
	Via string `json:"via,omitempty"`
	// Run and Step name a graph run and its step.
	Run  string `json:"run,omitempty"`
	Step string `json:"step,omitempty"`
}

// String is the caller as `nerve log` shows it: "cli", "mcp:claude-code",
// "graph:g/step" (the run is in the JSON), "llm:agent".
func (c Caller) String() string {
	if c.Kind == "" {
		return "?"
	}
	var b strings.Builder
	b.WriteString(c.Kind)
	if c.Name != "" {
		b.WriteString(":" + c.Name)
	}
	if c.Step != "" {
		b.WriteString("/" + c.Step)
	}
	return b.String()
}

type callerKey struct{}

// WithCaller returns ctx carrying c as the caller of the calls made with it.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
