package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// handleScript runs a code-mode script against the session (`nerve
// script`, issue 30): each tool call goes through the session, so the
// call log shows it under the script's run with the request's caller as
// the script's client. A script that fails is answered 200 with an
// isError result, as a tool that failed is.
func (d *Daemon) handleScript(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	var req api.ScriptRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Script) == "" {
		return badRequest(errors.New(`the script is empty: give Starlark source, e.g. result = fs.read_text_file(path="a.txt") (docs/code-mode.md)`))
	}
	visible, err := scriptFilter(req.Tools)
	if err != nil {
		return err
	}
	ctx, span := telemetry.HTTPServer(r, s.Name())
	defer span.End(nil)
	ctx = node.WithCaller(ctx, callerOf(r))
	opts := &codemode.Options{Tools: s, Visible: visible, Filename: req.Filename}
	if req.Check {
		if err := codemode.Check(ctx, req.Script, opts); err != nil {
			writeJSON(w, http.StatusOK, codemode.ToolResult(nil, err))
			return nil
		}
		writeJSON(w, http.StatusOK, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the script compiles against the visible tools"}}})
		return nil
	}
	writeJSON(w, http.StatusOK, codemode.ToolResult(codemode.Run(ctx, req.Script, opts)))
	return nil
}

// handleScriptTool answers the run_script tool a script run on this
// route would see (`nerve script --list`): its description lists the
// visible tools as signatures.
func (d *Daemon) handleScriptTool(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	visible, err := scriptFilter(r.URL.Query().Get("tools"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, codemode.Tool(s.Toolset(r.Context()), &codemode.ToolOptions{Visible: visible}))
	return nil
}

// scriptFilter is the Visible of a script request's tool globs.
func scriptFilter(globs string) (func(string, *mcp.Tool) bool, error) {
	if globs == "" {
		return nil, nil
	}
	f, err := mcpserver.ParseFilter(globs)
	if err != nil {
		return nil, badRequest(fmt.Errorf("tools: %w", err))
	}
	return mcpserver.Exposure{f}.Allows, nil
}
