// Package mcpnode is the "mcp" node kind: one node is one connection to an
// MCP server — a child process over stdio, a streamable HTTP endpoint or a
// legacy SSE endpoint — built on the official Go SDK client.
//
// The node lists every tool of the server (all pages) and calls them
// concurrently, each call with its own progress token, an idle timeout that
// progress extends and an absolute cap. Resources, templates, prompts,
// completion, subscriptions and logging are exported as methods on *Node
// for the session's MCP endpoint and the Commander. Faults (a command that
// is not found, a server that exits, hangs, or writes garbage on stdout)
// put the node in ERROR with a message that says what to do; a stdio child
// runs in its own process group and is never left behind.
//
// Only internal/nodes/all and tests import it; node kinds never import each
// other.
package mcpnode
