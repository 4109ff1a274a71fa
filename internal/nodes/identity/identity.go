// Package identity is the identity node kind: one tool that returns its
// text unchanged. It exists for tests, demos and benchmarks of the paths
// around a node, where the node itself should cost nothing.
package identity

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind name.
const Kind = "identity"

var tool = &mcp.Tool{
	Name:        "identity",
	Title:       "Echo text",
	Description: "Returns the text it is given, unchanged.",
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"text": map[string]any{"type": "string", "description": "the text to return"},
		},
		"required":             []any{"text"},
		"additionalProperties": false,
	},
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
}

// Node is an identity node.
type Node struct {
	node.Base
	tools []*mcp.Tool
}

// New is the identity kind's node.Factory.
func New(spec node.Spec, env node.Env) (node.Node, error) {
	if len(spec.Command) > 0 {
		return nil, fmt.Errorf("identity node takes no command (got %q)", spec.Command)
	}
	n := &Node{tools: []*mcp.Tool{tool}}
	n.Init(spec, env)
	return n, nil
}

func (n *Node) Start(ctx context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	return n.Machine.To(node.Ready, "")
}

func (n *Node) Stop(ctx context.Context) error {
	switch n.State() {
	case node.Created, node.Stopped:
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	return n.Machine.To(node.Stopped, "")
}

func (n *Node) Interrupt(ctx context.Context) error { return nil }

func (n *Node) ListTools(ctx context.Context) ([]*mcp.Tool, error) { return n.tools, nil }

func (n *Node) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if req.Tool != tool.Name {
		return nil, fmt.Errorf("%w %q: node %q has only %q", node.ErrUnknownTool, req.Tool, n.ID(), tool.Name)
	}
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	var args struct {
		Text string `json:"text"`
	}
	if len(req.Arguments) > 0 {
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			n.EndCall(true)
			return nil, fmt.Errorf("%w: %v", node.ErrBadArgs, err)
		}
	}
	n.EndCall(false)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
}

func (n *Node) Info() node.Info {
	info := n.BaseInfo()
	info.Tools = len(n.tools)
	info.Summary = "echoes its text"
	return info
}
