package mcpserver

import (
	"context"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// The management tools (Options.Manage, issue 19): a model whose server
// died sees why and brings it back. They show and restart only the nodes
// the client's exposure lets it reach (Exposure.AllowsNode); --read-only
// hides restart_node.
const (
	ToolListNodes   = "list_nodes"
	ToolRestartNode = "restart_node"
)

var (
	listNodesTool = &mcp.Tool{
		Name:  ToolListNodes,
		Title: "List the session's nodes",
		Description: "The nodes of this nerve session — MCP servers, shells, agents — each with its state " +
			"(READY, BUSY, STOPPED, ERROR …), its last error and how many tools it has. Use it when a tool fails " +
			"or disappears to see why; restart_node brings a node in ERROR back.",
		InputSchema: schema(`{"type":"object","properties":{},"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
	restartNodeTool = &mcp.Tool{
		Name:  ToolRestartNode,
		Title: "Restart a node",
		Description: "Stop a node of this nerve session and start it again — an MCP server in ERROR after it crashed " +
			"or hung — and answer its new state. Its conversation or shell state may be lost; list_nodes names the nodes.",
		InputSchema: schema(`{"type":"object","properties":{` +
			`"node":{"type":"string","description":"the node's id, as list_nodes gives it (fs, not fs.read_file)"}},` +
			`"required":["node"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true},
	}
)

// manageTools returns the management tools a client with exp gets.
func (s *Server) manageTools(exp Exposure) map[string]wantTool {
	want := map[string]wantTool{}
	if !exp.hidesName(ToolListNodes) {
		want[ToolListNodes] = wantTool{tool: listNodesTool, handler: s.listNodes}
	}
	if !exp.hidesName(ToolRestartNode) && !exp.readOnly() {
		want[ToolRestartNode] = wantTool{tool: restartNodeTool, handler: s.restartNode}
	}
	return want
}

// nodeView is one node as list_nodes shows it.
type nodeView struct {
	ID      string     `json:"id"`
	Kind    string     `json:"kind"`
	State   node.State `json:"state"`
	Error   string     `json:"error,omitempty"`
	Since   time.Time  `json:"since,omitzero"`
	Tools   int        `json:"tools"`
	Lazy    bool       `json:"lazy,omitempty"`
	Summary string     `json:"summary,omitempty"`
}

func view(in node.Info) nodeView {
	lazy, _ := in.Details["lazy"].(bool)
	return nodeView{ID: in.ID, Kind: in.Kind, State: in.State, Error: in.Error, Since: in.Since, Tools: in.Tools, Lazy: lazy, Summary: in.Summary}
}

// visible reports whether this client may see and restart node id.
func (s *Server) visible(id string) bool {
	if s.opts.Node != "" && id != s.opts.Node {
		return false
	}
	e := s.exposure.Load()
	return e == nil || e.AllowsNode(id)
}

func (s *Server) listNodes(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.last.Store(req.Session)
	infos, err := s.b.Nodes(ctx)
	if err != nil {
		return toolError("listing the session's nodes failed: %v (is the nerve daemon running? `nerve daemon status`)", err), nil
	}
	out := struct {
		Nodes []nodeView `json:"nodes"`
	}{Nodes: []nodeView{}}
	for _, in := range infos {
		if s.visible(in.ID) {
			out.Nodes = append(out.Nodes, view(in))
		}
	}
	return jsonResult(out)
}

func (s *Server) restartNode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.last.Store(req.Session)
	var in struct {
		Node string `json:"node"`
	}
	if err := metaArgs(req, &in); err != nil {
		return toolError("restart_node: %v: give {\"node\": \"ID\"}", err), nil
	}
	infos, err := s.b.Nodes(ctx)
	if err != nil {
		return toolError("listing the session's nodes failed: %v", err), nil
	}
	if !s.visible(in.Node) || !slices.ContainsFunc(infos, func(i node.Info) bool { return i.ID == in.Node }) {
		// The same words for a hidden node as for a missing one.
		return toolError("no node %q here: list_nodes names the nodes you may restart", in.Node), nil
	}
	info, err := s.b.Restart(ctx, in.Node)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return toolError("restarting node %q failed: %v", in.Node, err), nil
	}
	// Serve its tools again before answering: the model calls them next.
	s.Sync(ctx)
	return jsonResult(view(info))
}
