package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// SessionBackend is a Backend on a *session.Session in this process (the
// daemon). It is also an Attacher: attaching installs the session's hooks,
// so sampling and elicitation from an attached node reach the MCP client.
type SessionBackend struct {
	s *session.Session

	// mu guards the fields below.
	mu       sync.Mutex
	attached map[string]Attachment
	hooksSet bool
}

// NewSessionBackend returns a Backend on s.
func NewSessionBackend(s *session.Session) *SessionBackend {
	return &SessionBackend{s: s, attached: map[string]Attachment{}}
}

func (b *SessionBackend) Toolset(ctx context.Context) ([]ToolEntry, error) {
	entries := b.s.Toolset(ctx).Tools()
	out := make([]ToolEntry, len(entries))
	for i, e := range entries {
		out[i] = ToolEntry{Node: e.Node, Qualified: e.Qualified, LLMName: e.LLMName, Tool: e.Tool}
	}
	return out, nil
}

func (b *SessionBackend) Tools(ctx context.Context, nodeID string) ([]*mcp.Tool, error) {
	return b.s.Tools(ctx, nodeID)
}

func (b *SessionBackend) Nodes(ctx context.Context) ([]node.Info, error) { return b.s.Infos(), nil }

func (b *SessionBackend) Call(ctx context.Context, nodeID, tool string, args json.RawMessage, observe func(node.CallEvent)) (*mcp.CallToolResult, error) {
	return b.s.Call(ctx, nodeID, &node.CallRequest{Tool: tool, Arguments: args, Observe: observe})
}

func (b *SessionBackend) Watch(ctx context.Context) (Watch, error) {
	return &sessionWatch{sub: b.s.Subscribe(1024)}, nil
}

type sessionWatch struct{ sub *session.Subscription }

func (w *sessionWatch) Next(ctx context.Context) (session.Event, error) {
	select {
	case ev, ok := <-w.sub.C:
		if !ok {
			return session.Event{}, session.ErrClosed
		}
		return ev, nil
	case <-ctx.Done():
		return session.Event{}, ctx.Err()
	}
}

func (w *sessionWatch) Close() error { w.sub.Close(); return nil }

// features returns node id as an mcp node.
func (b *SessionBackend) features(nodeID string) (mcpFeatures, error) {
	n, err := b.s.Node(nodeID)
	if err != nil {
		return nil, err
	}
	f, ok := n.(mcpFeatures)
	if !ok {
		return nil, fmt.Errorf("%w: node %q is a %s node", ErrNoFeatures, nodeID, n.Kind())
	}
	return f, nil
}

func (b *SessionBackend) Features(ctx context.Context, nodeID string) (*Features, error) {
	f, err := b.features(nodeID)
	if err != nil {
		return nil, err
	}
	return &Features{
		Resources:    f.Resources(),
		Templates:    f.ResourceTemplates(),
		Prompts:      f.Prompts(),
		Capabilities: f.ServerCapabilities(),
		Instructions: f.Instructions(),
		ServerInfo:   f.ServerInfo(),
	}, nil
}

func (b *SessionBackend) ReadResource(ctx context.Context, nodeID, uri string) (*mcp.ReadResourceResult, error) {
	f, err := b.features(nodeID)
	if err != nil {
		return nil, err
	}
	return f.ReadResource(ctx, uri)
}

func (b *SessionBackend) GetPrompt(ctx context.Context, nodeID, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	f, err := b.features(nodeID)
	if err != nil {
		return nil, err
	}
	return f.GetPrompt(ctx, name, args)
}

func (b *SessionBackend) Complete(ctx context.Context, nodeID string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	f, err := b.features(nodeID)
	if err != nil {
		return nil, err
	}
	return f.Complete(ctx, params)
}

func (b *SessionBackend) Subscribe(ctx context.Context, nodeID, uri string) error {
	f, err := b.features(nodeID)
	if err != nil {
		return err
	}
	return f.Subscribe(ctx, uri)
}

func (b *SessionBackend) Unsubscribe(ctx context.Context, nodeID, uri string) error {
	f, err := b.features(nodeID)
	if err != nil {
		return err
	}
	return f.Unsubscribe(ctx, uri)
}

func (b *SessionBackend) SetLoggingLevel(ctx context.Context, nodeID, level string) error {
	f, err := b.features(nodeID)
	if err != nil {
		return err
	}
	return f.SetLoggingLevel(ctx, level)
}

// Attach routes node nodeID's sampling and elicitation requests and its
// resource updates to a until ctx ends. The session's hooks are replaced
// by a router the first time: nodes nobody attached to are declined, as
// they would be with no hooks.
func (b *SessionBackend) Attach(ctx context.Context, nodeID string, a Attachment) error {
	b.mu.Lock()
	b.attached[nodeID] = a
	if !b.hooksSet {
		b.hooksSet = true
		b.s.SetHooks(hookRouter{b})
	}
	b.mu.Unlock()
	if f, err := b.features(nodeID); err == nil {
		f.OnResourceUpdated(a.ResourceUpdated)
	}
	<-ctx.Done()
	b.mu.Lock()
	if b.attached[nodeID] == a {
		delete(b.attached, nodeID)
	}
	b.mu.Unlock()
	if f, err := b.features(nodeID); err == nil {
		f.OnResourceUpdated(nil)
	}
	return nil
}

func (b *SessionBackend) attachment(nodeID string) Attachment {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.attached[nodeID]
}

// hookRouter passes a node's hook requests to whoever attached to it.
type hookRouter struct{ b *SessionBackend }

func (r hookRouter) Sample(ctx context.Context, nodeID string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if a := r.b.attachment(nodeID); a != nil {
		return a.Sample(ctx, nodeID, req)
	}
	return nil, session.ErrNoOneToAsk
}

func (r hookRouter) Elicit(ctx context.Context, nodeID string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if a := r.b.attachment(nodeID); a != nil {
		return a.Elicit(ctx, nodeID, req)
	}
	return &mcp.ElicitResult{Action: "decline"}, nil
}

var (
	_ Backend  = (*SessionBackend)(nil)
	_ Attacher = (*SessionBackend)(nil)
)
