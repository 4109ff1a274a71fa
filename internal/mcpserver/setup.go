package mcpserver

import (
	"context"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxProtocol is the newest protocol version the server speaks.
const maxProtocol = "2025-11-25"

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
	}
	o := &mcp.ServerOptions{
		Capabilities:       caps,
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { s.last.Store(req.Session) },
		// The current protocol, 2026-07-28, forbids requests to the client while
		// serving one (SEP-2322 wants them returned as input requests), but
		// a node's server asks for sampling or elicitation in the middle of
		// a call: offer the versions up to 2025-11-25, which every client
		// speaks today.
		SupportedProtocolVersions: slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v > maxProtocol }),
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
