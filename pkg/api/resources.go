package api

// CodeUnsupported is the error code for a request the node's kind cannot
// answer: the resources of a bash node, resetting a node that keeps no
// conversation (400).
const CodeUnsupported = "unsupported"

// ReadRequest is the body of POST /v1/sessions/{s}/nodes/{n}/resources/read;
// the answer is an mcp.ReadResourceResult.
type ReadRequest struct {
	URI string `json:"uri"`
}

// PromptRequest is the body of POST /v1/sessions/{s}/nodes/{n}/prompts/get;
// the answer is an mcp.GetPromptResult. GET …/prompts lists []*mcp.Prompt.
type PromptRequest struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}
