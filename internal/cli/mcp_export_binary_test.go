//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryExportRoundTrip: `nerve mcp export` writes the session's
// servers as a .mcp.json — stdio with env, http with headers, a disabled
// one — whose ${VAR}s are references, never their values, and which
// `nerve mcp import` reads back to the same specs (issue 27 item 7).
func TestBinaryExportRoundTrip(t *testing.T) {
	n := newRealNerve(t)
	n.Env = append(os.Environ(), "MY_KEY=s3cret-value", "GH_TOKEN=gh-s3cret")
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	proj := filepath.Join(n.home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(proj, ".mcp.json")
	if err := os.WriteFile(conf, []byte(`{"mcpServers": {
  "srv": {"command": "`+server+`", "args": ["--many", "2"], "env": {"API_KEY": "${MY_KEY}", "MODE": "test"}, "timeout": "45s"},
  "gh": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}, "disabled": true}
}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Must("mcp", "import", conf)

	out := filepath.Join(n.home, "elsewhere", "exported.json")
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		t.Fatal(err)
	}
	n.Must("mcp", "export", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, secret := range []string{"s3cret-value", "gh-s3cret"} {
		if strings.Contains(text, secret) {
			t.Errorf("the export holds the value of a variable (%s):\n%s", secret, text)
		}
	}
	var got struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("the export is not JSON: %v\n%s", err, text)
	}
	srv, gh := got.MCPServers["srv"], got.MCPServers["gh"]
	if srv["command"] != server || srv["type"] != "stdio" || srv["cwd"] != proj || srv["timeout"] != "45s" ||
		srv["env"].(map[string]any)["API_KEY"] != "${MY_KEY}" {
		t.Errorf("srv exported as %v", srv)
	}
	if gh["type"] != "http" || gh["url"] != "https://api.example.com/mcp" || gh["disabled"] != true ||
		gh["headers"].(map[string]any)["Authorization"] != "Bearer ${GH_TOKEN}" {
		t.Errorf("gh exported as %v", gh)
	}
	if strings.Contains(text, "source") || strings.Contains(text, ".mcp.json") {
		t.Errorf("the export says where the servers were imported from:\n%s", text)
	}

	// Read back: the same specs, so the import skips both.
	imported := n.Must("mcp", "import", out)
	for _, id := range []string{"srv", "gh"} {
		if !strings.Contains(imported, "skipped "+id+": already in the session with the same spec") {
			t.Errorf("importing the export again:\n%s", imported)
		}
	}
	// Standard output is the same document; an existing file is kept.
	if stdout := n.Must("mcp", "export"); stdout != text {
		t.Errorf("export to stdout:\n%s\nwant\n%s", stdout, text)
	}
	if _, errs, code := n.Run("mcp", "export", out); code != ExitUsage || !strings.Contains(errs, "exists: give --force") {
		t.Errorf("export over an existing file: exit %d, %q", code, errs)
	}
}
