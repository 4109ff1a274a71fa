package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Code mode (Options.Code, issue 30): the client sees run_script, whose
// description lists the exposed tools as Python-like signatures, instead
// of the tools themselves — beside search_tools, describe_tool and
// call_tool with Options.Discover. A script's calls are the session's
// calls, made as this client's: the exposure filters decide what the
// script sees and calls, and the call log records each call under the
// script's run, its caller the script and this client.

// codeTools returns what to serve in code mode: run_script beside the
// meta-tools of want (discovery's or management's), or alone; nothing
// when a filter hides it by name. Sync calls it with the lock held, so
// the description follows every change of the tools.
func (s *Server) codeTools(ctx context.Context, exp Exposure, want map[string]wantTool) map[string]wantTool {
	out := map[string]wantTool{}
	if s.opts.Discover {
		out = want
	}
	if exp.hidesName(codemode.ToolName) {
		return out
	}
	opts := &codemode.ToolOptions{Visible: s.scriptVisible}
	if s.opts.Discover {
		opts.Describe, opts.Search = ToolDescribe, ToolSearch
	}
	out[codemode.ToolName] = wantTool{tool: codemode.Tool(backendTools{s.b}.Toolset(ctx), opts), handler: s.runScript}
	return out
}

// scriptVisible is what a script of this server's clients may see and
// call: the tools exposed as of the last Sync (of the one node served, in
// node mode).
func (s *Server) scriptVisible(id string, t *mcp.Tool) bool {
	return (s.opts.Node == "" || id == s.opts.Node) && s.exposed(id, t)
}

// runScript runs a script for a client: its calls carry the client as
// their caller's client, and each call's end reaches a client that gave
// a progress token as a progress notification, so a long script is seen
// alive (and a client that resets its timeout on progress keeps waiting).
func (s *Server) runScript(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ss := req.Session
	s.last.Store(ss)
	var in struct {
		Script string `json:"script"`
	}
	if err := metaArgs(req, &in); err != nil {
		return toolError("run_script: %v: give {\"script\": \"Starlark source\"}", err), nil
	}
	if strings.TrimSpace(in.Script) == "" {
		return toolError(`run_script needs a script, e.g. {"script": "result = fs.list_directory(path=\".\")"}; its description lists the tools`), nil
	}
	opts := &codemode.Options{Tools: backendTools{s.b}, Visible: s.scriptVisible}
	if tok := req.Params.GetProgressToken(); tok != nil && ss != nil {
		var mu sync.Mutex
		var seq float64
		opts.Observe = func(ev node.CallEvent) {
			mu.Lock()
			defer mu.Unlock()
			seq++
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: seq, Message: scriptCallMessage(ev)})
		}
	}
	res, err := codemode.Run(s.callContext(ctx, ss), in.Script, opts) // approve.go: the client approves its script's calls
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return codemode.ToolResult(res, err), nil
}

// scriptCallMessage is one call of a script as a progress message:
// "fs.read_text_file done (line 3, 12ms)".
func scriptCallMessage(ev node.CallEvent) string {
	var d struct {
		Step   string  `json:"step"`
		State  string  `json:"state"`
		Line   int     `json:"line"`
		Millis float64 `json:"ms"`
		Error  string  `json:"error"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.Step == "" {
		return "script: a tool call ended"
	}
	msg := fmt.Sprintf("%s %s (line %d, %.0fms)", d.Step, d.State, d.Line, d.Millis)
	if d.Error != "" {
		msg += ": " + d.Error
	}
	return msg
}

// backendTools is a Backend as the node.ToolCaller a script calls
// through: the session's tools, each call the backend's Call (the
// session validates it and logs it with the caller ctx carries).
type backendTools struct{ b Backend }

func (t backendTools) Toolset(ctx context.Context) *node.Toolset {
	if b, ok := t.b.(interface {
		NodeToolset(context.Context) *node.Toolset
	}); ok {
		return b.NodeToolset(ctx)
	}
	entries, err := t.b.Toolset(ctx)
	if err != nil {
		return node.NewToolset(nil)
	}
	return node.ToolsetOf(func(yield func(string, *mcp.Tool) bool) {
		for _, e := range entries {
			if !yield(e.Node, e.Tool) {
				return
			}
		}
	})
}

func (t backendTools) CallTool(ctx context.Context, name string, args json.RawMessage, observe func(node.CallEvent)) (*mcp.CallToolResult, error) {
	id, tool, ok := node.SplitQualified(name)
	if !ok {
		return nil, fmt.Errorf("%w %q: a script calls tools as node.tool", node.ErrUnknownTool, name)
	}
	return t.b.Call(ctx, id, tool, args, nil, observe)
}

// NodeToolset is the session's toolset as it is, for scripts: no copy
// into ToolEntry values and back.
func (b *SessionBackend) NodeToolset(ctx context.Context) *node.Toolset { return b.s.Toolset(ctx) }
