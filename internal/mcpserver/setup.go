package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionTitle starts the title a session's MCP server gives in its
// serverInfo ("nerve session default"): with the name "nerve" it tells an
// MCP client that the server is a nerve session, so a session's mcp node
// can refuse to contain one (internal/nodes/mcpnode checks the same words).
const SessionTitle = "nerve session"

func (s *Server) implementation() *mcp.Implementation {
	v := s.opts.Version
	if v == "" {
		v = "dev"
	}
	if s.opts.Node != "" {
		return &mcp.Implementation{Name: "nerve/" + s.opts.Node, Version: v}
	}
	title := SessionTitle
	if b, ok := s.b.(interface{ SessionName() string }); ok {
		title += " " + b.SessionName()
	}
	return &mcp.Implementation{Name: "nerve", Title: title, Version: v}
}

func (s *Server) serverOptions() *mcp.ServerOptions {
	caps := &mcp.ServerCapabilities{
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Logging:     &mcp.LoggingCapabilities{},
		Completions: &mcp.CompletionCapabilities{},
		// A client of 2026-07-28 that declares it gets a task for a
		// graph's run and a long call (tasks.go).
		Extensions: map[string]any{tasksExtension: map[string]any{}},
	}
	o := &mcp.ServerOptions{
		Capabilities:       caps,
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { s.last.Store(req.Session) },
		SetCacheable:       s.setCacheable, // modern.go
		// Both eras (modern.go): a client of 2026-07-28 is served without
		// a session, and what a node asks in the middle of its call reaches
		// it as input_required (mrtr.go); initialize negotiates 2025-11-25
		// or older.
		SupportedProtocolVersions: mcp.SupportedProtocolVersions(),
	}
	if s.opts.Node == "" {
		o.Instructions = "The tools of a nerve session: each is named node.tool after the node (a bash shell, an MCP server, Claude Code, an agent) that provides it."
		if s.opts.Discover {
			o.Instructions += " They are not listed: find them with search_tools (a query in words), then call one with call_tool."
		}
		if s.opts.Code {
			o.Instructions += " run_script runs a Starlark script that calls them as functions (node.tool(arg=value)) and answers with its result only: one request for a task of many calls."
		}
		if s.opts.Manage {
			o.Instructions += " list_nodes shows the nodes and why one failed; restart_node brings one back."
		}
		return o
	}
	// Node mode mirrors the server behind the node when it is known now.
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	mn, err := s.b.MCPNode(ctx, s.opts.Node)
	if err != nil {
		if errors.Is(err, ErrNoFeatures) {
			caps.Resources, caps.Prompts, caps.Completions = nil, nil, nil
		}
		return o
	}
	f := FeaturesOf(mn)
	o.Instructions = f.Instructions
	if c := f.Capabilities; c != nil {
		if c.Resources == nil {
			caps.Resources = nil
		} else {
			caps.Resources.Subscribe = c.Resources.Subscribe
		}
		if c.Prompts == nil {
			caps.Prompts = nil
		}
		if c.Completions == nil {
			caps.Completions = nil
		}
		caps.Experimental = c.Experimental
	}
	return o
}
