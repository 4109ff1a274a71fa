package clientconf

import "path/filepath"

// Clients are the clients whose user config Path knows, in help order.
var Clients = []string{"claude-code", "claude-desktop", "vscode", "cursor"}

// Path returns the user-scope config file of client and the key of its
// servers object; "" for a client it does not know. home is the home
// folder, goos the platform, appData Windows' %APPDATA%.
func Path(client, home, goos, appData string) (path, key string) {
	switch client {
	case "claude-code":
		return filepath.Join(home, ".claude.json"), "mcpServers"
	case "cursor":
		return filepath.Join(home, ".cursor", "mcp.json"), "mcpServers"
	case "claude-desktop":
		return filepath.Join(appFolder(home, goos, appData), "Claude", "claude_desktop_config.json"), "mcpServers"
	case "vscode":
		return filepath.Join(appFolder(home, goos, appData), "Code", "User", "mcp.json"), "servers"
	}
	return "", ""
}

// appFolder is where desktop applications keep their settings.
func appFolder(home, goos, appData string) string {
	switch goos {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support")
	case "windows":
		return appData
	}
	return filepath.Join(home, ".config")
}

// Places are where the MCP clients people use keep their servers, project
// files (relative to the current folder) first: `nerve mcp import` with
// no FILE lists those that exist.
func Places(home, goos, appData string) []string {
	desktop, _ := Path("claude-desktop", home, goos, appData)
	vscode, _ := Path("vscode", home, goos, appData)
	return []string{
		".mcp.json", // Claude Code, project
		filepath.Join(".cursor", "mcp.json"),
		filepath.Join(".vscode", "mcp.json"),
		filepath.Join(home, ".claude.json"), // Claude Code, user
		filepath.Join(home, ".cursor", "mcp.json"),
		desktop,
		vscode,
	}
}
