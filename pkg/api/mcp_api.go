package api

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPEndpoint answers GET /v1/sessions/{s}/mcp: the session's MCP endpoint
// over streamable HTTP and the bearer token it requires.
type MCPEndpoint struct {
	URL       string `json:"url"`
	Token     string `json:"token"`
	TokenFile string `json:"token_file,omitempty"`
	// NodeURL is the endpoint of one node with NODE in place of its id.
	NodeURL string `json:"node_url"`
}

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

// MCP methods of POST /v1/sessions/{s}/nodes/{n}/mcp, passed to the
// node's server with their MCP params and answered with its MCP result.
const (
	MCPReadResource = "resources/read"
	MCPGetPrompt    = "prompts/get"
	MCPComplete     = "completion/complete"
	MCPSubscribe    = "resources/subscribe"
	MCPUnsubscribe  = "resources/unsubscribe"
	MCPSetLevel     = "logging/setLevel"
)

// MCPRequest is the body of POST /v1/sessions/{s}/nodes/{n}/mcp.
type MCPRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Lines of GET /v1/sessions/{s}/nodes/{n}/mcp/attach, a stream that makes
// its reader the one who answers the node's requests for a person.
const (
	AttachSample          = "sample"           // Params: mcp.CreateMessageParams; answer with mcp.CreateMessageResult
	AttachElicit          = "elicit"           // Params: mcp.ElicitParams; answer with mcp.ElicitResult
	AttachResourceUpdated = "resource_updated" // URI: no answer
	AttachReady           = "ready"            // the first line: the attachment is in place
	// AttachWithdrawn: request ID no longer waits (Reason says why: the
	// server cancelled it, the call that caused it ended, it timed out);
	// it takes no answer, and whoever is asking it stops.
	AttachWithdrawn = "withdrawn"
)

// AttachLine is one line of an attach stream.
type AttachLine struct {
	Kind   string          `json:"kind"`
	ID     string          `json:"id,omitempty"`
	URI    string          `json:"uri,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// Reason is why an AttachWithdrawn request was withdrawn, a phrase
	// such as "the call ended".
	Reason string `json:"reason,omitempty"`
}

// AttachAnswer is the body of POST
// /v1/sessions/{s}/nodes/{n}/mcp/attach/{id}: a result, or an error
// message when the client could not answer.
type AttachAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// CodeNotMCP is the error code for an MCP request to a node that is not
// an MCP server (404).
const CodeNotMCP = "not_mcp"

// UpgradeMCPStdio is the protocol GET /v1/sessions/{s}/mcp/stdio switches
// the connection to (`Connection: Upgrade`, `Upgrade: mcp-stdio`):
// newline-delimited MCP JSON-RPC, as on a stdio server's pipes. `nerve mcp
// serve` relays its stdin and stdout onto it.
const UpgradeMCPStdio = "mcp-stdio"
