package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/nerve-dev/nerve/pkg/api"
)

// SetOverride sets the override of node id's tool (by its own name or
// the name an override gave it): merge adds ov's fields to the override,
// else ov replaces it. The daemon refuses one that does not fit the
// tool's schema (a *Error with code bad_request that says why).
func (s *Session) SetOverride(ctx context.Context, id, tool string, ov api.ToolOverride, merge bool) (api.OverrideResponse, error) {
	method := http.MethodPut
	if merge {
		method = http.MethodPatch
	}
	var out api.OverrideResponse
	err := s.c.do(ctx, method, s.overridePath(id, tool), ov, &out)
	return out, err
}

// ClearOverride removes the override of node id's tool.
func (s *Session) ClearOverride(ctx context.Context, id, tool string) (api.OverrideResponse, error) {
	var out api.OverrideResponse
	err := s.c.do(ctx, http.MethodDelete, s.overridePath(id, tool), nil, &out)
	return out, err
}

func (s *Session) overridePath(id, tool string) string {
	return s.nodePath(id) + "/tools/" + url.PathEscape(tool) + "/override"
}
