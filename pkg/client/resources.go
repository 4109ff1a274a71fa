package client

import (
	"context"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Reset makes a node forget its conversation (llm). For a node that keeps
// none the error matches ErrUnsupported.
func (s *Session) Reset(ctx context.Context, id string) (api.Info, error) {
	var r api.NodeResponse
	err := s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/reset", nil, &r)
	return r.Info, err
}
