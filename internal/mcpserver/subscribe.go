package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
func (a attachment) ResourceUpdated(uri string) {
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	_ = a.s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}
