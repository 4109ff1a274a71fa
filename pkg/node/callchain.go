package node

import (
	"context"
	"fmt"
	"strings"
)

// MaxCallDepth bounds how deeply calls nest through nerve: a graph step
// that calls a node, an mcp node whose server is a nerve endpoint, a call
// that comes in on nerve's MCP endpoint. Each call a session makes is one
// hop. A graph that called itself through nerve's own endpoint made 9,980
// nested calls in 25 s and ran the daemon out of descriptors (issue 21).
const MaxCallDepth = 16

// ChainMetaKey is the _meta key of a tools/call request that carries the
// chain of calls it is part of, so the chain survives a hop through MCP:
// mcp nodes send it, nerve's MCP endpoint reads it. Its value is the list
// of hops, outermost first.
const ChainMetaKey = "dev.nerve/call-chain"

// FromCallEnv names the variable a node sets in the environment of what it
// runs for a call (a bash node's command), identifying that call; a nerve
// client started from there (`nerve call` in the command) sends it back
// as its calls' _meta[FromCallMetaKey], so that the node can tell a call
// made from inside its own call in flight — which, on a node that runs
// one call at a time, would wait for itself until a timeout — and refuse
// it at once (issue 27).
const FromCallEnv = "NERVE_FROM_CALL"

// FromCallMetaKey is the _meta key of a call that carries FromCallEnv.
const FromCallMetaKey = "dev.nerve/from-call"

// ErrCallDepth is the error of a call nested deeper than MaxCallDepth.
var ErrCallDepth = fmt.Errorf("calls nest more than %d deep", MaxCallDepth)

type chainKey struct{}

// hop is one call of a chain, linked to the call it is made in: a hop
// costs one allocation, not a copy of the chain (Session.Call adds one to
// every call).
type hop struct {
	session, node string // session "" when node is a whole hop read from _meta
	prev          *hop
	depth         int
}

func (h *hop) String() string {
	if h.session == "" {
		return h.node
	}
	return h.session + "/" + h.node
}

func (h *hop) chain() []string {
	if h == nil {
		return nil
	}
	out := make([]string, h.depth)
	for i := h.depth - 1; h != nil && i >= 0; h, i = h.prev, i-1 {
		out[i] = h.String()
	}
	return out
}

// CallChain returns the hops of the call ctx belongs to, outermost first
// ("session/node" each); nil outside any call.
func CallChain(ctx context.Context) []string {
	h, _ := ctx.Value(chainKey{}).(*hop)
	return h.chain()
}

// WithCallChain returns ctx carrying chain as the hops so far (read from a
// request's _meta): an error when it is already too long.
func WithCallChain(ctx context.Context, chain []string) (context.Context, error) {
	if len(chain) > MaxCallDepth {
		return ctx, chainError(chain)
	}
	if len(chain) == 0 {
		return ctx, nil
	}
	var h *hop
	for i, c := range chain {
		h = &hop{node: c, prev: h, depth: i + 1}
	}
	return context.WithValue(ctx, chainKey{}, h), nil
}

// WithHop returns ctx with the call of node in session added to its
// chain, or an error naming the chain when that would nest the call more
// than MaxCallDepth deep.
func WithHop(ctx context.Context, session, node string) (context.Context, error) {
	prev, _ := ctx.Value(chainKey{}).(*hop)
	h := &hop{session: session, node: node, prev: prev, depth: 1}
	if prev != nil {
		h.depth = prev.depth + 1
	}
	if h.depth > MaxCallDepth {
		return ctx, chainError(h.chain())
	}
	return context.WithValue(ctx, chainKey{}, h), nil
}

func chainError(chain []string) error {
	shown := chain
	if len(shown) > 2*MaxCallDepth {
		shown = append(append(append([]string(nil), chain[:MaxCallDepth]...), "…"), chain[len(chain)-MaxCallDepth:]...)
	}
	return fmt.Errorf("%w (the limit): %s; a node calls itself, through a graph or an mcp node whose server is nerve, without end — break the loop", ErrCallDepth, strings.Join(shown, " → "))
}

// ChainFromMeta reads the chain of a request's _meta; nil when it has none
// or it is not a list of strings.
func ChainFromMeta(meta map[string]any) []string {
	raw, ok := meta[ChainMetaKey].([]any)
	if !ok {
		if s, ok := meta[ChainMetaKey].([]string); ok {
			return s
		}
		return nil
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}
