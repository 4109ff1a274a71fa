package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api/mcpapi"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// ErrNoFeatures is returned by MCPNodes for a node that is not an
// MCP server (bash, claude, …): it has tools only.
var ErrNoFeatures = errors.New("node has no resources or prompts")

// ToolEntry is one tool of the session's toolset under both its names.
type ToolEntry struct {
	Node      string
	Qualified string
	LLMName   string
	Tool      *mcp.Tool
}

// Features is what an mcp node's server offers beyond tools: the local
// API's answer, the same fields.
type Features = mcpapi.MCPFeatures

// Watch delivers a session's events until Close. Next and Close may be
// called from different goroutines; Close may be called twice.
type Watch interface {
	Next(ctx context.Context) (session.Event, error)
	Close() error
}

// Backend is the session as the MCP server sees it: its tools, its
// nodes, and what its mcp nodes offer beyond tools. SessionBackend
// implements it; all methods are safe for concurrent use and honour ctx.
type Backend interface {
	ToolSource
	NodeManager
	MCPNodes
}

// ToolSource is what serving the session's tools needs.
type ToolSource interface {
	// Toolset returns every tool of every node, whatever its state (a
	// node that cannot take calls now keeps its tools listed; a call says
	// why), without waiting for a node that is starting.
	Toolset(ctx context.Context) ([]ToolEntry, error)
	// Tools returns one node's tools.
	Tools(ctx context.Context, nodeID string) ([]*mcp.Tool, error)
	// Expose returns the session's default tool filter (`nerve session
	// set expose`), "" for every tool.
	Expose(ctx context.Context) (string, error)
	// Call calls a node's tool. observe receives progress, log messages
	// and streamed text as they happen; cancelling ctx cancels the call
	// (and the node's MCP server is told).
	Call(ctx context.Context, nodeID, tool string, args json.RawMessage, meta map[string]any, observe func(node.CallEvent)) (*mcp.CallToolResult, error)
	// Watch subscribes to the session's events; every event after it
	// returns is delivered, except that a backend may leave out a node's
	// moves between READY and BUSY (they change nothing served).
	Watch(ctx context.Context) (Watch, error)
}

// NodeManager is what the management tools and discovery need.
type NodeManager interface {
	// Nodes returns the Info of every node, in the order they were added.
	Nodes(ctx context.Context) ([]node.Info, error)
	// Readiness says what a call to node id meets now, without waiting:
	// "" when it runs at once, else the node's state and what happens or
	// what starts it (session.Session.Readiness).
	Readiness(ctx context.Context, nodeID string) (string, error)
	// Restart stops and starts node id and returns its Info after.
	Restart(ctx context.Context, nodeID string) (node.Info, error)
}

// MCPNodes finds the session's mcp nodes; both return ErrNoFeatures for
// a node of another kind.
type MCPNodes interface {
	// MCPNode returns node nodeID as it is: its lists may come from its
	// catalogue, and it may not be running.
	MCPNode(ctx context.Context, nodeID string) (MCPNode, error)
	// RunningMCPNode returns node nodeID once it can serve a request that
	// needs its server, by the session's waiting rule: a lazy node is
	// started, one that is starting is waited for.
	RunningMCPNode(ctx context.Context, nodeID string) (MCPNode, error)
}

// FeaturesOf returns what f offers beyond tools.
func FeaturesOf(f MCPNode) *Features {
	return &Features{
		Resources:    f.Resources(),
		Templates:    f.ResourceTemplates(),
		Prompts:      f.Prompts(),
		Capabilities: f.ServerCapabilities(),
		Instructions: f.Instructions(),
		ServerInfo:   f.ServerInfo(),
	}
}

// Attacher is implemented by backends that can pass a node's requests
// for a person (sampling, elicitation) and its resource-updated
// notifications to the MCP client in node mode. Attach returns when ctx
// ends or the attachment fails.
type Attacher interface {
	Attach(ctx context.Context, nodeID string, a Attachment) error
}

// CallAttacher is a backend that can attach for the time of one call:
// AttachFor returns once a is in place (a request the node makes from
// then on reaches a) and detach undoes it. A session-wide server attaches
// so for each call, so a graph's ask step reaches the client that called.
type CallAttacher interface {
	AttachFor(ctx context.Context, nodeID string, a Attachment) (detach func(), err error)
}

// Attachment is what a node-mode server offers its node: answers to
// sampling and elicitation, and a sink for resource updates.
type Attachment interface {
	node.Hooks
	ResourceUpdated(uri string)
}

// MCPNode is the method set of an mcp node (internal/nodes/mcpnode.Node) the
// server and the daemon use; it is matched by type assertion so node
// kinds stay unimported.
type MCPNode interface {
	Resources() []*mcp.Resource
	ResourceTemplates() []*mcp.ResourceTemplate
	Prompts() []*mcp.Prompt
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(ctx context.Context, uri string) error
	OnResourceUpdated(f func(uri string))
	SetLoggingLevel(ctx context.Context, level string) error
	Instructions() string
	ServerCapabilities() *mcp.ServerCapabilities
	ServerInfo() *mcp.Implementation
}
