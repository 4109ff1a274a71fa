// Package mcpserver serves a nerve session as an MCP server built with the
// Go SDK: every tool of every ready node as node.tool (or its LLM-safe
// name), the resources, templates and prompts of mcp nodes, and
// notifications/tools/list_changed whenever the set changes. In node mode
// it serves exactly one node, unprefixed, with all its capabilities —
// a persistent proxy for one server.
//
// The server reaches the session through a Backend (three small
// interfaces: ToolSource, NodeManager, MCPNodes): SessionBackend wraps a
// *session.Session (the daemon's streamable HTTP endpoint, see
// NewHTTPHandler, and the daemon's stdio connections that `nerve mcp
// serve` relays). Only internal/daemon and internal/cli import it.
//
// One file per operation: server.go (Options, Server, Run and Sync, the
// method middleware), setup.go (serverInfo, capabilities, instructions),
// tools.go (tools/list and tools/call), features.go (the resources,
// templates and prompts of mcp nodes served), resources.go, prompts.go,
// completion.go, subscribe.go (resources/subscribe and updates),
// logging.go (logging/setLevel), relay.go (sampling and elicitation
// passed to a client), discover.go and manage.go (the discovery and
// management tools), expose.go (the exposure filters), http*.go and
// limit*.go (the HTTP endpoint); modern.go (the two protocol eras: a
// client of 2026-07-28 served without a session, on the same URL and on
// stdio), mrtr.go (a node's question in the middle of such a client's
// call returned as input_required, the call held until the retry),
// tasks.go and taskstore.go (the tasks extension: a graph's run and a long
// call as a task, a session's tasks on disk, taken up after a restart).
package mcpserver
