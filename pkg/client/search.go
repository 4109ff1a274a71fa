package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/nerve-dev/nerve/pkg/api"
)

// SearchTools ranks the session's tools for words, as search_tools of
// `nerve mcp serve --discover` does: at most limit tools (0: the
// daemon's default), best first. The daemon answers at once, nodes that
// are starting included.
func (s *Session) SearchTools(ctx context.Context, words string, limit int) (*api.ToolSearch, error) {
	q := url.Values{"q": {words}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.ToolSearch
	if err := s.c.do(ctx, http.MethodGet, s.path+"/tools/search?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
