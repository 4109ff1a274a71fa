package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Script runs a code-mode script in the session (docs/code-mode.md) and
// returns its answer as the daemon sent it: an MCP CallToolResult as
// JSON (pkg/client/mcpclient.Result decodes it), with isError for a
// script that failed or was stopped, its structured content holding the
// result, what the script printed, and the error's line and column.
// Cancelling ctx stops the script.
func (s *Session) Script(ctx context.Context, req api.ScriptRequest) (json.RawMessage, error) {
	var out json.RawMessage
	err := s.c.do(ctx, http.MethodPost, s.path+"/script", req, &out)
	return out, err
}

// ScriptTool returns the run_script tool (an MCP Tool as JSON) as a
// script given the tool globs tools ("" for every tool) would see it:
// its description lists the tools the script may call.
func (s *Session) ScriptTool(ctx context.Context, tools string) (json.RawMessage, error) {
	path := s.path + "/script"
	if tools != "" {
		path += "?tools=" + url.QueryEscape(tools)
	}
	var out json.RawMessage
	err := s.c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}
