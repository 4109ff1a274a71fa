package session

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// ErrNoOneToAsk is returned for sampling when no person or agent is
// attached to answer it.
var ErrNoOneToAsk = node.ErrNoOneToAsk

// hooksProxy forwards to the session's current hooks, declining when none
// are set: a request that needs a person never hangs.
type hooksProxy struct {
	mu sync.RWMutex
	h  node.Hooks
}

func (p *hooksProxy) set(h node.Hooks) {
	p.mu.Lock()
	p.h = h
	p.mu.Unlock()
}

func (p *hooksProxy) get() node.Hooks {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.h
}

func (p *hooksProxy) Sample(ctx context.Context, nodeID string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if h := p.get(); h != nil {
		return h.Sample(ctx, nodeID, req)
	}
	return nil, ErrNoOneToAsk
}

func (p *hooksProxy) Elicit(ctx context.Context, nodeID string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if h := p.get(); h != nil {
		return h.Elicit(ctx, nodeID, req)
	}
	return node.NoOneDeclined(), nil
}
