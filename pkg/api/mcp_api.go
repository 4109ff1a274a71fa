package api

import (
	"encoding/json"
	"net/url"
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

// MCPServe is what one MCP client of a session asks for: the flags of
// `nerve mcp serve`, sent as the query of GET …/mcp/stdio (and the same
// names on the HTTP endpoint's URL).
type MCPServe struct {
	// Node serves that node alone (?node=).
	Node string
	// Names is "", "qualified" (node.tool) or "llm" (node__tool) (?names=).
	Names string
	// Tools is the client's tool filter: comma-separated globs over
	// node.tool, "!" to exclude (?tools=). It narrows the session's
	// expose setting, never widens it.
	Tools string
	// ReadOnly exposes only tools annotated readOnlyHint (?read_only=1).
	ReadOnly bool
	// Discover serves search_tools, describe_tool and call_tool instead
	// of every tool (?discover=1).
	Discover bool
	// Manage adds list_nodes and restart_node (?manage=1).
	Manage bool
	// Code serves run_script, a script over the tools, instead of the
	// tools (beside the discovery tools with Discover) (?code=1).
	Code bool
}

// Query returns o as URL query parameters.
func (o MCPServe) Query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"node": o.Node, "names": o.Names, "tools": o.Tools} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for k, v := range map[string]bool{"read_only": o.ReadOnly, "discover": o.Discover, "manage": o.Manage, "code": o.Code} {
		if v {
			q.Set(k, "1")
		}
	}
	return q
}

// UpgradeMCPStdio is the protocol GET /v1/sessions/{s}/mcp/stdio switches
// the connection to (`Connection: Upgrade`, `Upgrade: mcp-stdio`):
// newline-delimited MCP JSON-RPC, as on a stdio server's pipes. `nerve mcp
// serve` relays its stdin and stdout onto it.
const UpgradeMCPStdio = "mcp-stdio"
