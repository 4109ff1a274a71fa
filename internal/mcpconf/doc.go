// Package mcpconf reads MCP server configurations in the formats users
// already have — Claude Desktop, Claude Code's .mcp.json, Cursor and VS Code —
// expands ${VAR} references in them, and builds the environment a stdio
// server is started with.
//
// Parse and Load return servers unexpanded, in file order, because nerve
// saves specs with their ${VAR} references intact; Server.Expand resolves
// them when a server is started. Server.Spec turns a server into the
// node.Spec of an "mcp" node, whose kind-specific settings are Options.
//
// A config is read by encoding/json and github.com/tailscale/hujson (VS
// Code's comments and trailing commas, the byte offset of every value), so
// every error and warning names a line and column (position.go).
//
// It sits in layer 2: it imports only pkg/node, internal/suggest, hujson
// and the standard library, and is imported by the mcp node kind, the
// session and the command line.
package mcpconf
