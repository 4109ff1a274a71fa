package client

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Resources returns an mcp node's resources and resource templates. For a
// node of another kind the error matches ErrUnsupported.
func (s *Session) Resources(ctx context.Context, id string) (api.Resources, error) {
	var r api.Resources
	err := s.c.do(ctx, http.MethodGet, s.nodePath(id)+"/resources", nil, &r)
	return r, err
}

// ReadResource reads the resource at uri from an mcp node.
func (s *Session) ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error) {
	var r mcp.ReadResourceResult
	if err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/resources/read", api.ReadRequest{URI: uri}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Prompts returns an mcp node's prompts.
func (s *Session) Prompts(ctx context.Context, id string) ([]*mcp.Prompt, error) {
	var p []*mcp.Prompt
	err := s.c.do(ctx, http.MethodGet, s.nodePath(id)+"/prompts", nil, &p)
	return p, err
}

// GetPrompt renders an mcp node's prompt name with args.
func (s *Session) GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var r mcp.GetPromptResult
	if err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/prompts/get", api.PromptRequest{Name: name, Arguments: args}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Reset makes a node forget its conversation (llm). For a node that keeps
// none the error matches ErrUnsupported.
func (s *Session) Reset(ctx context.Context, id string) (node.Info, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/reset", nil, &r)
	return r.Info, err
}
