// Package clientconf reads and edits the config files of MCP clients
// (Claude Code, Claude Desktop, VS Code, Cursor): where each keeps its
// servers (Path, Places), their servers planned as nerve's mcp nodes
// (Load, Parse), and nerve's own entry written into a file (SetEntry)
// through github.com/tailscale/hujson's syntax tree, so the comments,
// trailing commas, spacing and every other byte the person wrote stay as
// they were. It also tells whether a program's path is a stable install
// that a client config may name (Unstable). `nerve mcp connect` and
// `nerve mcp import` are its users; it prints nothing and talks to no
// daemon.
package clientconf
