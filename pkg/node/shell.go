package node

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keys of a tool's _meta that say how it runs shell code, so that a graph
// passes its values as data the shell reads itself, never as program text
// (docs/graphs.md, "Values and the shell"). The bash kind sets all three.
const (
	// MetaShell names the argument whose string the tool runs as a bash
	// command.
	MetaShell = "nerve.dev/shell"
	// MetaShellArgs names the argument whose list of strings becomes that
	// command's positional parameters ($1, $2, …).
	MetaShellArgs = "nerve.dev/shell_args"
	// MetaArgv names the argument whose list of strings is a program and
	// its arguments, run with no shell.
	MetaArgv = "nerve.dev/argv"
)

// ShellParams are the arguments a tool's _meta marks (MetaShell,
// MetaShellArgs, MetaArgv); "" for each it does not mark.
type ShellParams struct {
	Command, Args, Argv string
}

// ShellParamsOf reads a tool's _meta.
func ShellParamsOf(meta map[string]any) ShellParams {
	get := func(k string) string { s, _ := meta[k].(string); return s }
	return ShellParams{Command: get(MetaShell), Args: get(MetaShellArgs), Argv: get(MetaArgv)}
}

// ErrNoOneToAsk is a request for a person (sampling, elicitation) that no
// one attached could answer: no Commander, no MCP client that supports it.
var ErrNoOneToAsk = errors.New("no one is attached to answer this request; it was declined")

// ErrCallEnded is the cause of the context of a request for a person that
// arose from a call (a server's input_required, a task waiting for input)
// once that call ended — cancelled, interrupted, timed out — so whoever
// asked can say so: the question is withdrawn because its call ended.
var ErrCallEnded = errors.New("the call ended")

type askedKey struct{}

// WithAsked returns ctx with told, which whoever puts ctx's request for a
// person (an elicitation) to someone calls with who that is — "the
// Commander (pid 4242 on /dev/pts/3)" — so that a caller waiting on the
// answer can say where the question went (a graph's ask: step run from
// `nerve call` waited silently for a Commander open elsewhere; issue 27).
func WithAsked(ctx context.Context, told func(who string)) context.Context {
	return context.WithValue(ctx, askedKey{}, told)
}

// Asked tells ctx's WithAsked, if any, that its request was put to who.
func Asked(ctx context.Context, who string) {
	if told, _ := ctx.Value(askedKey{}).(func(string)); told != nil && who != "" {
		told(who)
	}
}

// MetaUnanswered marks, in an ElicitResult's _meta, a decline that no
// person gave: no one was attached to ask.
const MetaUnanswered = "nerve.dev/unanswered"

// NoOneDeclined is the decline given when no one is attached to ask.
func NoOneDeclined() *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "decline", Meta: mcp.Meta{MetaUnanswered: true}}
}

// ToolDescriber is a ToolCaller that can say what a tool is before it is
// called, or why it cannot be called (a node in ERROR, with the fix). The
// session is one.
type ToolDescriber interface {
	DescribeTool(ctx context.Context, name string) (*mcp.Tool, error)
}
