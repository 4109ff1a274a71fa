// Package mcpapi holds the bodies of nerve's local API whose fields are
// the MCP SDK's types (an mcp node's features and resources). It is apart
// from pkg/api so that a client that does not read them links neither the
// SDK nor its JSON schema package; the daemon and pkg/client/mcpclient
// import it.
package mcpapi

import "github.com/modelcontextprotocol/go-sdk/mcp"

// MCPFeatures answers GET /v1/sessions/{s}/nodes/{n}/mcp: what an mcp
// node's server offers beyond tools.
type MCPFeatures struct {
	Resources    []*mcp.Resource         `json:"resources,omitempty"`
	Templates    []*mcp.ResourceTemplate `json:"templates,omitempty"`
	Prompts      []*mcp.Prompt           `json:"prompts,omitempty"`
	Capabilities *mcp.ServerCapabilities `json:"capabilities,omitempty"`
	Instructions string                  `json:"instructions,omitempty"`
	ServerInfo   *mcp.Implementation     `json:"server_info,omitempty"`
}

// Resources answers GET /v1/sessions/{s}/nodes/{n}/resources: an mcp
// node's resources and resource templates.
type Resources struct {
	Resources []*mcp.Resource         `json:"resources"`
	Templates []*mcp.ResourceTemplate `json:"templates"`
}
