package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	r *hookRouter
}

// routers holds one hookRouter per session: every backend on a session
// shares it, since a session has one set of hooks.
var routers sync.Map // *session.Session → *hookRouter

// NewSessionBackend returns a Backend on s.
func NewSessionBackend(s *session.Session) *SessionBackend {
	r, _ := routers.LoadOrStore(s, &hookRouter{attached: map[string][]Attachment{}})
	return &SessionBackend{s: s, r: r.(*hookRouter)}
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

func (b *SessionBackend) Readiness(_ context.Context, nodeID string) (string, error) {
	return b.s.Readiness(nodeID)
}

func (b *SessionBackend) Restart(ctx context.Context, nodeID string) (node.Info, error) {
	if err := b.s.Restart(ctx, nodeID); err != nil {
		return node.Info{}, err
	}
	return b.s.Info(nodeID)
}

func (b *SessionBackend) Expose(context.Context) (string, error) { return b.s.Settings().Expose, nil }

// SessionName returns the name of the session served.
func (b *SessionBackend) SessionName() string { return b.s.Name() }

func (b *SessionBackend) Call(ctx context.Context, nodeID, tool string, args json.RawMessage, meta map[string]any, observe func(node.CallEvent)) (*mcp.CallToolResult, error) {
	return b.s.Call(ctx, nodeID, &node.CallRequest{Tool: tool, Arguments: args, Meta: meta, Observe: observe})
}

// Watch leaves out a node's moves between READY and BUSY: every call makes
// two, they change nothing served, and dropping them on the publishing
// goroutine spares the server a wake-up per move.
func (b *SessionBackend) Watch(ctx context.Context) (Watch, error) {
	return &sessionWatch{sub: b.s.SubscribeFiltered(1024, func(ev *session.Event) bool {
		return ev.Kind != session.EventState || !callable(ev.From) || !callable(ev.To)
	})}, nil
}

// callable says whether a node in state st takes calls.
func callable(st string) bool { return st == node.Ready.String() || st == node.Busy.String() }

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

// MCPNode implements MCPNodes.
func (b *SessionBackend) MCPNode(_ context.Context, nodeID string) (MCPNode, error) {
	n, err := b.s.Node(nodeID)
	if err != nil {
		return nil, err
	}
	return asMCPNode(n)
}

// RunningMCPNode implements MCPNodes.
func (b *SessionBackend) RunningMCPNode(ctx context.Context, nodeID string) (MCPNode, error) {
	n, err := b.s.Node(nodeID)
	if err != nil {
		return nil, err
	}
	if _, err := asMCPNode(n); err != nil {
		return nil, err
	}
	if _, err := b.s.Ready(ctx, nodeID); err != nil {
		return nil, err
	}
	return asMCPNode(n)
}

func asMCPNode(n node.Node) (MCPNode, error) {
	f, ok := n.(MCPNode)
	if !ok {
		return nil, fmt.Errorf("%w: node %q is a %s node", ErrNoFeatures, n.ID(), n.Kind())
	}
	return f, nil
}

// Attach routes node nodeID's sampling and elicitation requests and its
// resource updates to a until ctx ends (the latest attachment wins). The
// session's hooks are replaced by the router the first time: nodes nobody
// attached to are declined, as they would be with no hooks.
func (b *SessionBackend) Attach(ctx context.Context, nodeID string, a Attachment) error {
	detach := b.AttachNow(nodeID, a)
	<-ctx.Done()
	detach()
	return nil
}

// AttachFor implements CallAttacher.
func (b *SessionBackend) AttachFor(_ context.Context, nodeID string, a Attachment) (func(), error) {
	return b.AttachNow(nodeID, a), nil
}

// AttachNow is Attach that returns at once, attached; detach undoes it.
func (b *SessionBackend) AttachNow(nodeID string, a Attachment) (detach func()) {
	b.r.mu.Lock()
	b.r.attached[nodeID] = append(b.r.attached[nodeID], a)
	if !b.r.set {
		b.r.set = true
		b.s.SetHooks(b.r)
	}
	b.r.mu.Unlock()
	if f, err := b.MCPNode(context.Background(), nodeID); err == nil {
		f.OnResourceUpdated(func(uri string) {
			if a := b.r.get(nodeID); a != nil {
				a.ResourceUpdated(uri)
			}
		})
	}
	return func() { b.r.detach(nodeID, a) }
}

func (r *hookRouter) detach(nodeID string, a Attachment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.attached[nodeID]
	if i := slices.Index(list, a); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(r.attached, nodeID)
	} else {
		r.attached[nodeID] = list
	}
}

// hookRouter passes a node's hook requests to whoever attached to it last.
type hookRouter struct {
	// mu guards the fields below.
	mu       sync.Mutex
	attached map[string][]Attachment
	set      bool
}

// get returns the attachment of nodeID that attached last and can be
// reached: an HTTP server whose clients are all gone passes the requests
// to the one before it.
func (r *hookRouter) get(nodeID string) Attachment {
	r.mu.Lock()
	list := slices.Clone(r.attached[nodeID])
	r.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		if av, ok := list[i].(interface{ available() bool }); !ok || av.available() {
			return list[i]
		}
	}
	return nil
}

func (r *hookRouter) Sample(ctx context.Context, nodeID string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if a := r.get(nodeID); a != nil {
		return a.Sample(ctx, nodeID, req)
	}
	return nil, session.ErrNoOneToAsk
}

func (r *hookRouter) Elicit(ctx context.Context, nodeID string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if a := r.get(nodeID); a != nil {
		return a.Elicit(ctx, nodeID, req)
	}
	return node.NoOneDeclined(), nil
}

var (
	_ Backend  = (*SessionBackend)(nil)
	_ Attacher = (*SessionBackend)(nil)
)
