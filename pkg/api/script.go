package api

// ScriptRequest is the body of POST /v1/sessions/{s}/script: a code-mode
// script (Starlark, docs/code-mode.md) that the daemon runs against the
// session, each tool call one of the session's. The answer is the
// script's result as the run_script meta-tool gives it: an MCP
// CallToolResult, with isError for a script that failed or was stopped.
type ScriptRequest struct {
	// Script is the Starlark source.
	Script string `json:"script"`
	// Filename names the script in the positions of its errors
	// ("script" when empty).
	Filename string `json:"filename,omitempty"`
	// Tools narrows the tools the script may call, in the globs of
	// `nerve mcp serve --tools` (fs.*,!fs.write_*); empty: every tool.
	Tools string `json:"tools,omitempty"`
	// Check compiles the script against the visible tools without
	// running it.
	Check bool `json:"check,omitempty"`
}
