//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryMCPConnect: for each client, on a throwaway HOME, `nerve mcp
// connect` with --dry-run shows the change and writes nothing; the first
// run writes the `nerve mcp serve` entry (backing up a file that existed,
// keeping everything else in it) and the second changes nothing.
func TestBinaryMCPConnect(t *testing.T) {
	n := newRealNerve(t)
	for _, tt := range []struct {
		client, file, key, before string
	}{
		{"claude-code", ".claude.json", "mcpServers", "{\n  \"numStartups\": 3,\n  \"projects\": {\n    \"/x\": {\n      \"mcpServers\": {}\n    }\n  },\n  \"theme\": \"dark\"\n}\n"},
		{"claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers", ""},
		{"vscode", ".config/Code/User/mcp.json", "servers", "{\n\t\"servers\": {\n\t\t\"other\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://example.com/mcp\"\n\t\t}\n\t}\n}\n"},
		{"cursor", ".cursor/mcp.json", "mcpServers", "{\"mcpServers\": {}}"},
	} {
		t.Run(tt.client, func(t *testing.T) {
			home := t.TempDir()
			n.Env = append(os.Environ(), "NERVE_HOME="+n.home, "HOME="+home)
			path := filepath.Join(home, tt.file)
			if tt.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, errs, code := n.Run("mcp", "connect", tt.client, "--dry-run")
			if code != 0 || !strings.Contains(out, `+`) || !strings.Contains(out, `"nerve": {`) || !strings.Contains(errs, "dry run") {
				t.Fatalf("--dry-run: exit %d\n%s%s", code, out, errs)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.before {
				t.Fatalf("--dry-run changed the file:\n%s", b)
			}
			out, errs, code = n.Run("mcp", "connect", tt.client)
			if code != 0 || !strings.Contains(errs, "connected "+tt.client+" to nerve") {
				t.Fatalf("connect: exit %d\n%s%s", code, out, errs)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatalf("the written file is not JSON: %v\n%s", err, b)
			}
			servers, _ := cfg[tt.key].(map[string]any)
			entry, _ := servers["nerve"].(map[string]any)
			args, _ := entry["args"].([]any)
			if entry["command"] != n.bin || len(args) != 2 || args[0] != "mcp" || args[1] != "serve" {
				t.Errorf("the nerve entry is %v; want %s mcp serve", entry, n.bin)
			}
			backups, _ := filepath.Glob(path + ".nerve-backup-*")
			if tt.before != "" {
				if len(backups) != 1 {
					t.Fatalf("backups %v; want one", backups)
				}
				if old, _ := os.ReadFile(backups[0]); string(old) != tt.before {
					t.Errorf("the backup is not the old file:\n%s", old)
				}
				var was map[string]any
				json.Unmarshal([]byte(tt.before), &was)
				for k, v := range was {
					if k != tt.key && !jsonEqual(mustRaw(v), mustRaw(cfg[k])) {
						t.Errorf("key %q changed: %v → %v", k, v, cfg[k])
					}
				}
				if tt.client == "vscode" && servers["other"] == nil {
					t.Errorf("the client's own server is gone:\n%s", b)
				}
			} else if len(backups) != 0 {
				t.Errorf("a backup of a file that did not exist: %v", backups)
			}
			// Twice: nothing changes, no new backup.
			out, errs, code = n.Run("mcp", "connect", tt.client)
			if code != 0 || out != "" || !strings.Contains(errs, "already connected") {
				t.Errorf("second connect: exit %d\n%s%s", code, out, errs)
			}
			if again, _ := os.ReadFile(path); string(again) != string(b) {
				t.Errorf("the second connect changed the file:\n%s", again)
			}
			if more, _ := filepath.Glob(path + ".nerve-backup-*"); len(more) != len(backups) {
				t.Errorf("the second connect made a backup: %v", more)
			}
		})
	}
}

func mustRaw(v any) []byte { b, _ := json.Marshal(v); return b }

// TestBinaryMCPConnectMove: --move imports the client's servers into nerve
// and removes them from the client, which keeps only nerve (and what nerve
// could not take).
func TestBinaryMCPConnectMove(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	home := t.TempDir()
	n.Env = append(os.Environ(), "NERVE_HOME="+n.home, "HOME="+home)
	path := filepath.Join(home, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	before, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		"fx":     map[string]any{"command": server},
		"broken": map[string]any{"command": "/nonexistent/server"},
	}}, "", "  ")
	os.WriteFile(path, before, 0o600)
	out, errs, code := n.Run("mcp", "connect", "cursor", "--move")
	if code != 0 || !strings.Contains(errs, "moved fx to nerve as node fx") || !strings.Contains(errs, "broken not moved") {
		t.Fatalf("connect --move: exit %d\n%s%s", code, out, errs)
	}
	if got := n.Must("call", "@fx", "echo", "text=moved"); got != "moved\n" {
		t.Errorf("the moved server through nerve: %q", got)
	}
	var cfg struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &cfg)
	if cfg.MCPServers["fx"] != nil || cfg.MCPServers["nerve"] == nil || cfg.MCPServers["broken"] == nil {
		t.Errorf("the client's servers after --move: %v", cfg.MCPServers)
	}
	if _, errs, code := n.Run("mcp", "connect", "cursor", "--move"); code != 0 || !strings.Contains(errs, "already connected") && !strings.Contains(errs, "broken not moved") {
		t.Errorf("second --move: exit %d %s", code, errs)
	}
}
