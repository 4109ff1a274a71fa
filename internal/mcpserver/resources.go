package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourceHandler answers resources/read for a resource or template of
// node id.
func (s *Server) resourceHandler(id string) mcp.ResourceHandler {
	return s.roundsResource(func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		s.last.Store(req.Session)
		f, err := s.b.RunningMCPNode(ctx, id)
		if err != nil {
			return nil, err
		}
		res, err := f.ReadResource(ctx, req.Params.URI)
		return res, withData(err) // modern.go
	}) // mrtr.go
}

// nodeOfURI finds the node serving uri: a listed resource, else a
// template that matches it; in node mode, the node.
func (s *Server) nodeOfURI(uri string) (string, bool) {
	if s.opts.Node != "" {
		return s.opts.Node, true
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if sv, ok := s.resources[uri]; ok {
		return sv.node, true
	}
	for t, sv := range s.templates {
		if templateMatches(t, uri) {
			return sv.node, true
		}
	}
	return "", false
}

// listed reports whether uri is served as a resource or matches a template.
func (s *Server) listed(uri string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if _, ok := s.resources[uri]; ok {
		return true
	}
	for t := range s.templates {
		if templateMatches(t, uri) {
			return true
		}
	}
	return false
}
