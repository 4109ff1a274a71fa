package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/sendq"
)

// subscribe passes resources/subscribe to the node serving the URI (a
// lazy node is started).
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	id, ok := s.nodeOfURI(req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	f, err := s.b.RunningMCPNode(ctx, id)
	if err != nil {
		return err
	}
	return f.Subscribe(ctx, req.Params.URI)
}

// unsubscribe passes resources/unsubscribe to the node serving the URI if
// it is running (a node that is not has no subscription to end).
func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	id, ok := s.nodeOfURI(req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	f, err := s.b.MCPNode(ctx, id)
	if err != nil {
		return err
	}
	return f.Unsubscribe(ctx, req.Params.URI)
}

// ResourceUpdated tells the clients subscribed to uri that the server
// behind the attached node changed it.
// ResourceUpdated queues the news for the server's subscribed clients: it
// comes from a node's delivery goroutine, which must not wait for them.
func (a attachment) ResourceUpdated(uri string) {
	a.s.updates.Push(uri, len(uri))
}

// sendUpdates tells the subscribed clients which resources changed.
func (s *Server) sendUpdates(batch []sendq.Item[string]) {
	for _, it := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), startWait)
		_ = s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: it.Value})
		cancel()
	}
}
