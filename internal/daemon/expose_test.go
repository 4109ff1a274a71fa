package daemon

import (
	"bufio"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/api"
)

// TestMCPStdioOptions: the stdio route passes a client's choices
// (`nerve mcp serve --tools --discover --manage`) to its server, and the
// session's expose setting is checked when set (issue 18 item 3, issue 19).
func TestMCPStdioOptions(t *testing.T) {
	_, c := stdioDaemon(t)
	s := c.Session(DefaultSession)
	if _, err := s.SetSettings(t.Context(), api.Settings{Expose: "fs.["}); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("expose fs.[: %v, want a 400 saying the glob is malformed", err)
	}
	if _, err := s.MCPStdioWith(t.Context(), api.MCPServe{Tools: "!"}); err == nil || !strings.Contains(err.Error(), "excludes nothing") {
		t.Errorf("--tools '!': %v, want refused before MCP is spoken", err)
	}
	for _, tt := range []struct {
		name string
		o    api.MCPServe
		want []string
		not  []string
	}{
		{"tools", api.MCPServe{Tools: "!echo.*"}, nil, []string{"echo.identity"}},
		{"discover and manage", api.MCPServe{Discover: true, Manage: true}, []string{"search_tools", "call_tool", "list_nodes", "restart_node"}, []string{"echo.identity"}},
		{"read-only manage", api.MCPServe{Manage: true, ReadOnly: true}, []string{"echo.identity", "list_nodes"}, []string{"restart_node"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := s.MCPStdioWith(t.Context(), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			send(t, conn, initLine, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			a := answer(t, r, 2)
			for _, w := range tt.want {
				if !strings.Contains(string(a.Result), `"name":"`+w+`"`) {
					t.Errorf("tools/list lacks %s: %s", w, a.Result)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(string(a.Result), `"name":"`+n+`"`) {
					t.Errorf("tools/list has %s: %s", n, a.Result)
				}
			}
		})
	}
}
