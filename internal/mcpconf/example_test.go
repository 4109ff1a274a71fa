package mcpconf_test

import (
	"fmt"

	"github.com/nerve-dev/nerve/internal/mcpconf"
)

// A server is read unexpanded, saved as a node spec, and expanded when it
// starts.
func Example() {
	cfg, err := mcpconf.Parse(".mcp.json", []byte(`{
  "mcpServers": {
    "gh": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
      "autoApprove": []
    }
  }
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Warnings[0])
	gh := cfg.Servers[0]
	fmt.Println(gh.Transport, gh.Command, gh.Spec("gh").Env)

	unset := func(string) (string, bool) { return "", false }
	_, err = gh.Expand(unset, cfg.Path)
	fmt.Println(err)

	set := func(k string) (string, bool) { return "ghp_123", k == "GITHUB_TOKEN" }
	x, _ := gh.Expand(set, cfg.Path)
	fmt.Println(mcpconf.ChildEnv(x, []string{"PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=s3cret"}))
	// Output:
	// .mcp.json:7:7: server "gh": unknown key "autoApprove" ignored
	// stdio [npx -y @modelcontextprotocol/server-github] map[GITHUB_PERSONAL_ACCESS_TOKEN:${GITHUB_TOKEN}]
	// .mcp.json: server "gh": variable ${GITHUB_TOKEN} is not set (set it, or write ${GITHUB_TOKEN:-default})
	// [PATH=/usr/bin GITHUB_PERSONAL_ACCESS_TOKEN=ghp_123]
}
