// Package codemode runs code-mode scripts (issue 30): small Starlark
// programs (go.starlark.net) in which every tool a caller may see is a
// function, so an agent makes many dependent tool calls in one request and
// only the script and its result pass through its model's context.
//
// A script reaches nothing but those tools — no load, no files, network,
// clock or environment — and runs within limits on interpreter steps, wall
// time, tool calls and the bytes of the values it builds, each stopped
// with an error that names the limit and its value. Every call goes
// through a node.ToolCaller (the session), so exposure rules, the call
// chain and the call log apply; each call's caller is the script run.
//
// Run runs a script, Check compiles one without running it, Tool builds
// the run_script meta-tool whose description lists the visible tools as
// Python-like signatures, and ToolResult turns a run into the
// *mcp.CallToolResult every surface answers with; Reads tells which keys
// a script reads a global with (a graph's script step waits for the
// steps it names). The daemon (`nerve script`), the MCP server
// (run_script of `nerve mcp serve --code`), the graph language and
// runtime (script steps), the llm kind (`--code`) and the planner
// (`nerve plan`) import it; it imports pkg/node and internal/suggest
// only. docs/code-mode.md is the user's page.
package codemode
