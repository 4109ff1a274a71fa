package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// promptHandler answers prompts/get for the prompt name of node id.
func (s *Server) promptHandler(id, name string) mcp.PromptHandler {
	return s.roundsPrompt(name, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		s.last.Store(req.Session)
		f, err := s.b.RunningMCPNode(ctx, id)
		if err != nil {
			return nil, err
		}
		return f.GetPrompt(ctx, name, req.Params.Arguments)
	}) // mrtr.go
}
