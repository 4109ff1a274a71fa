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

// ErrCallDepth is the error of a call nested deeper than MaxCallDepth.
var ErrCallDepth = fmt.Errorf("calls nest more than %d deep", MaxCallDepth)

type chainKey struct{}

// CallChain returns the hops of the call ctx belongs to, outermost first
// ("session/node" each); nil outside any call.
func CallChain(ctx context.Context) []string {
	c, _ := ctx.Value(chainKey{}).([]string)
	return c
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
	return context.WithValue(ctx, chainKey{}, append([]string(nil), chain...)), nil
}

// WithHop returns ctx with hop added to its chain, or an error naming the
// chain when that would nest the call more than MaxCallDepth deep.
func WithHop(ctx context.Context, hop string) (context.Context, error) {
	c := CallChain(ctx)
	next := make([]string, len(c), len(c)+1)
	copy(next, c)
	next = append(next, hop)
	if len(next) > MaxCallDepth {
		return ctx, chainError(next)
	}
	return context.WithValue(ctx, chainKey{}, next), nil
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
