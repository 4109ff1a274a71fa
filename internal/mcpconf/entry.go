package mcpconf

// Entry is one server as Claude Code's .mcp.json writes it ({"mcpServers":
// {NAME: Entry}}), which every MCP client and Parse read: what nerve
// writes for a claude node's --mcp-config and for `nerve mcp export`.
// Values are written as given: ${VAR} references stay references.
type Entry struct {
	Type         string            `json:"type,omitempty"`
	Command      string            `json:"command,omitempty"`
	Args         []string          `json:"args,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Cwd          string            `json:"cwd,omitempty"`
	URL          string            `json:"url,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Timeout      string            `json:"timeout,omitempty"`
	StartTimeout string            `json:"startTimeout,omitempty"`
	InheritEnv   bool              `json:"inheritEnv,omitempty"`
	Disabled     bool              `json:"disabled,omitempty"`
}
