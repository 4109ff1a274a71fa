package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/sendq"
	"github.com/nerve-dev/nerve/pkg/node"
)

// wantTool is a tool to serve under name: a node's, or one of the
// server's own (handler set).
type wantTool struct {
	node    string
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

// wantedTools is what to serve: every tool of the session's nodes (or of
// the one node, unprefixed), whatever each node's state, that exp allows.
// A node that cannot take calls keeps its tools listed and a call says why
// (issue 27): tools never vanish while a node starts, stops or restarts.
func (s *Server) wantedTools(ctx context.Context, exp Exposure) (map[string]wantTool, error) {
	want := map[string]wantTool{}
	entries, err := s.b.Toolset(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !exp.Allows(e.Node, e.Tool) {
			continue
		}
		var name string
		switch {
		case s.opts.Node != "":
			if e.Node != s.opts.Node {
				continue
			}
			name = e.Tool.Name
		case s.opts.Names == NamesLLM:
			name = e.LLMName
		default:
			name = e.Qualified
		}
		want[name] = wantTool{node: e.Node, tool: e.Tool}
	}
	return want, nil
}

func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%p", v)
	}
	return string(b)
}

func (s *Server) applyTools(want map[string]wantTool) {
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.tools, name)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names) // clients see a stable order
	for _, name := range names {
		w := want[name]
		fp := w.node + "\x00" + fingerprint(w.tool)
		if cur, ok := s.tools[name]; ok && cur.fp == fp {
			continue
		}
		t := *w.tool
		t.Name = name
		t.InputSchema = objectSchema(t.InputSchema)
		h := w.handler
		if h == nil {
			h = s.toolHandler(w.node, w.tool)
		}
		if err := s.addTool(&t, h); err != nil {
			s.log.Warn("a tool cannot be served", zap.String("node", w.node), zap.String("tool", w.tool.Name), zap.Error(err))
			continue
		}
		s.tools[name] = served{node: w.node, name: w.tool.Name, fp: fp}
	}
}

// addTool adds t, turning the SDK's panics on a malformed tool (from a
// misbehaving server behind a node) into an error.
func (s *Server) addTool(t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.srv.AddTool(t, h)
	return nil
}

// objectSchema returns schema if it is a JSON object schema, else the
// schema of any object: the SDK (and the spec) require type "object".
func objectSchema(schema any) any {
	if schema != nil {
		var m map[string]any
		if b, err := json.Marshal(schema); err == nil && json.Unmarshal(b, &m) == nil && m["type"] == "object" {
			return schema
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// toolHandler calls t on node id, passing progress, log messages and
// streamed text to the client and the client's cancellation to the node.
func (s *Server) toolHandler(id string, t *mcp.Tool) mcp.ToolHandler {
	tool := t.Name
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !s.exposed(id, t) {
			// Hidden since it was listed (the session's expose setting
			// changed): as unknown as a tool never listed.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", req.Params.Name)}
		}
		ss := req.Session
		s.last.Store(ss)
		if s.opts.Node != "" {
			defer s.callStarted(ss)()
		} else if p := ss.InitializeParams(); p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil {
			// Session-wide: what the called node asks of a person during
			// this call (a graph's ask step) goes to this client.
			if ca, ok := s.b.(CallAttacher); ok {
				defer s.callStarted(ss)()
				if detach, err := ca.AttachFor(ctx, id, attachment{s}); err == nil {
					defer detach()
				}
			}
		}
		tok := req.Params.GetProgressToken()
		// The node delivers events on a goroutine that must never wait
		// for a client (one that stops reading would freeze the node for
		// every caller): they reach this client through the call's own
		// queue, which drops what does not fit (internal/sendq), and are
		// all sent before the result.
		var seq float64
		q := sendq.New(notifyQueueBytes, func(batch []sendq.Item[node.CallEvent]) {
			for _, it := range batch {
				s.notify(ctx, ss, tok, &seq, it.Value)
			}
		})
		defer func() {
			if lost := q.Close(); lost > 0 {
				s.log.Debug("a client did not read a call's events in time", zap.Int("dropped", lost))
			}
		}()
		observe := func(ev node.CallEvent) {
			q.Push(ev, 256+len(ev.Text)+len(ev.Message)+len(ev.Data))
		}
		var args json.RawMessage
		var meta map[string]any
		if req.Params != nil {
			args = req.Params.Arguments
			meta = req.Params.Meta
		}
		res, err := s.b.Call(s.callContext(ctx, ss), id, tool, args, meta, observe) // approve.go
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The call could not be made (node not ready, bad arguments,
			// connection lost): the model reads why and may try again.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{}}
		}
		return res, nil
	}
}

// caller is ss's client as the call log names it: its initialize
// clientInfo name and how it came.
func (s *Server) caller(ss *mcp.ServerSession) node.Caller {
	c := node.Caller{Kind: node.CallerMCP, Via: cmp.Or(s.via, "stdio")}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			c.Name = p.ClientInfo.Name
		}
	}
	return c
}

// stepMessage is a step event as one line: "step read finished (12ms)",
// "step review failed: …", or the step's name.
func stepMessage(ev node.CallEvent) string {
	var d struct {
		Step   string  `json:"step"`
		State  string  `json:"state"`
		Millis float64 `json:"ms"`
		Error  string  `json:"error"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.Step == "" || d.State == "" {
		return ev.Step
	}
	msg := "step " + d.Step + " " + d.State
	if d.Millis > 0 {
		msg += fmt.Sprintf(" (%.0fms)", d.Millis)
	}
	if d.Error != "" {
		msg += ": " + d.Error
	}
	return msg
}

// notifyQueueBytes bounds the events queued for one call's client that
// does not read; beyond it they are dropped (progress and log messages
// are news, not results: the result always arrives).
const notifyQueueBytes = 256 << 10

// notify sends one event of a call to its client: progress (a graph's
// steps and streamed text too, numbered by seq) when the client gave a
// progress token, log messages always.
func (s *Server) notify(ctx context.Context, ss *mcp.ServerSession, tok any, seq *float64, ev node.CallEvent) {
	switch ev.Kind {
	case node.EventProgress:
		if tok != nil {
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: ev.Progress, Total: ev.Total, Message: ev.Message})
		}
	case node.EventText:
		if tok != nil {
			*seq++
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: *seq, Message: ev.Text})
		}
	case node.EventStep:
		// A graph's steps (and an agent's tool uses) are progress:
		// a caller that gave a token sees the call is alive, and a
		// client that resets its timeout on progress (the
		// TypeScript SDK's resetTimeoutOnProgress) keeps waiting.
		if tok != nil {
			*seq++
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: *seq, Message: stepMessage(ev)})
		}
	case node.EventLog:
		var data any = ev.Text
		if len(ev.Data) > 0 {
			data = ev.Data
		}
		_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(ev.Level), Logger: ev.Logger, Data: data})
	}
}
