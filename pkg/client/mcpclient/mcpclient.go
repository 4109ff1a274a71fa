// Package mcpclient is pkg/client in the MCP SDK's types: a call's
// result as an *mcp.CallToolResult, a node's tools, resources, prompts and
// sampling. The command line and the REPL use it; pkg/client itself
// returns JSON, so a program that only calls tools links neither the SDK
// nor its JSON schema package.
package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/api/mcpapi"
	"github.com/nerve-dev/nerve/pkg/client"
)

// Call is client.Session.Call with the result decoded.
func Call(ctx context.Context, s *client.Session, id, tool string, args json.RawMessage, observe func(api.CallLine)) (*mcp.CallToolResult, error) {
	return CallMeta(ctx, s, id, tool, args, nil, observe)
}

// CallMeta is client.Session.CallMeta with the result decoded.
func CallMeta(ctx context.Context, s *client.Session, id, tool string, args json.RawMessage, meta map[string]any, observe func(api.CallLine)) (*mcp.CallToolResult, error) {
	raw, err := s.CallMeta(ctx, id, tool, args, meta, observe)
	if err != nil {
		return nil, err
	}
	return decode(raw)
}

func decode(raw json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := Result(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the call's result: %v", client.ErrProtocol, err)
	}
	return res, nil
}

// CallLine is client.Session.CallLine in the SDK's types: the call's
// result, or (for a line that is not a call) the node's tools.
func CallLine(ctx context.Context, s *client.Session, id, line string, observe func(api.CallLine)) (*mcp.CallToolResult, []*mcp.Tool, error) {
	raw, tools, err := s.CallLine(ctx, id, line, observe)
	if err != nil {
		return nil, nil, err
	}
	if tools != nil {
		var ts []*mcp.Tool
		if err := json.Unmarshal(tools, &ts); err != nil {
			return nil, nil, fmt.Errorf("%w: reading the node's tools: %v", client.ErrProtocol, err)
		}
		return nil, ts, nil
	}
	res, err := decode(raw)
	return res, nil, err
}

// Tools returns a node's tools.
func Tools(ctx context.Context, s *client.Session, id string) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	err := s.Do(ctx, http.MethodGet, client.NodePath(id)+"/tools", nil, &tools)
	return tools, err
}

// ToolEntry is an api.Tool with its tool decoded; it reads and writes
// the same JSON (the shallower MCPTool takes the "tool" key, and the
// embedded api.Tool.Tool stays empty).
type ToolEntry struct {
	api.Tool
	MCPTool *mcp.Tool `json:"tool"`
}

// Toolset returns every tool of every node, whatever its state, as
// node.tool; the daemon answers at once (a node that is starting is listed
// from its catalogue).
func Toolset(ctx context.Context, s *client.Session) ([]ToolEntry, error) {
	var tools []ToolEntry
	err := s.Do(ctx, http.MethodGet, "/tools", nil, &tools)
	return tools, err
}

// Resources returns an mcp node's resources and resource templates. For a
// node of another kind the error matches client.ErrUnsupported.
func Resources(ctx context.Context, s *client.Session, id string) (mcpapi.Resources, error) {
	var r mcpapi.Resources
	err := s.Do(ctx, http.MethodGet, client.NodePath(id)+"/resources", nil, &r)
	return r, err
}

// ReadResource reads the resource at uri from an mcp node.
func ReadResource(ctx context.Context, s *client.Session, id, uri string) (*mcp.ReadResourceResult, error) {
	var r mcp.ReadResourceResult
	if err := s.Do(ctx, http.MethodPost, client.NodePath(id)+"/resources/read", api.ReadRequest{URI: uri}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Prompts returns an mcp node's prompts.
func Prompts(ctx context.Context, s *client.Session, id string) ([]*mcp.Prompt, error) {
	var p []*mcp.Prompt
	err := s.Do(ctx, http.MethodGet, client.NodePath(id)+"/prompts", nil, &p)
	return p, err
}

// GetPrompt renders an mcp node's prompt name with args.
func GetPrompt(ctx context.Context, s *client.Session, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var r mcp.GetPromptResult
	if err := s.Do(ctx, http.MethodPost, client.NodePath(id)+"/prompts/get", api.PromptRequest{Name: name, Arguments: args}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Features returns what an mcp node's server offers beyond tools. For
// another kind of node the error's Code is api.CodeNotMCP.
func Features(ctx context.Context, s *client.Session, id string) (mcpapi.MCPFeatures, error) {
	var f mcpapi.MCPFeatures
	err := s.Do(ctx, http.MethodGet, client.NodePath(id)+"/mcp", nil, &f)
	return f, err
}

// Sample has node id (an llm node) answer a sampling request an MCP server
// made. A node that cannot sample answers client.ErrBadRequest.
func Sample(ctx context.Context, s *client.Session, id string, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := s.Do(ctx, http.MethodPost, client.NodePath(id)+"/sample", params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
