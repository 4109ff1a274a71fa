//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
			n.Env = connectEnv(n, home)
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

// connectEnv is the environment of a connect on a throwaway HOME. The test
// binary lives in a temp folder, which connect refuses to write into a
// client's config: TMPDIR is moved elsewhere so that it passes for an
// install.
func connectEnv(n *realNerve, home string) []string {
	return append(os.Environ(), "NERVE_HOME="+n.home, "HOME="+home, "TMPDIR="+home, "GOTMPDIR=")
}

// TestBinaryMCPConnectKeepsComments: VS Code's mcp.json is JSON with
// comments and trailing commas; connect adds nerve's entry and keeps every
// other byte the person wrote. A file that is not JSONC is named at its
// line and column, and left as it was.
func TestBinaryMCPConnectKeepsComments(t *testing.T) {
	n := newRealNerve(t)
	home := t.TempDir()
	n.Env = connectEnv(n, home)
	path := filepath.Join(home, ".config", "Code", "User", "mcp.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	// A VS Code user mcp.json as people write them (clientconf's test
	// reads it too).
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal", "clientconf", "testdata", "vscode.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	before := string(b)
	os.WriteFile(path, []byte(before), 0o600)
	if out, errs, code := n.Run("mcp", "connect", "vscode"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errs)
	}
	entry := "\t\t\"nerve\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": " + string(mustRaw(n.bin)) +
		",\n\t\t\t\"args\": [\n\t\t\t\t\"mcp\",\n\t\t\t\t\"serve\"\n\t\t\t]\n\t\t},\n"
	at := strings.Index(before, "\t},\n\t\"inputs\"")
	b, _ = os.ReadFile(path)
	if want := before[:at] + entry + before[at:]; string(b) != want {
		t.Fatalf("the file after connect:\n%s\nwant every byte kept and the entry added:\n%s", b, want)
	}
	// nerve reads it back: the entry is a server of the file.
	out, errs, code := n.Run("mcp", "import", path, "--dry-run")
	if code != 0 || !strings.Contains(errs, "would skip nerve") || !strings.Contains(out, "café") {
		t.Errorf("import --dry-run of the connected file: exit %d\n%s%s", code, out, errs)
	}

	bad := strings.Replace(before, `"url": "https://api.githubcopilot.com/mcp/",`, `"url": "https://api.githubcopilot.com/mcp/"`, 1) + "x"
	bad = strings.Replace(bad, "\"type\": \"http\",", "\"type\": \"http\"", 1)
	os.WriteFile(path, []byte(bad), 0o600)
	out, errs, code = n.Run("mcp", "connect", "vscode")
	if code == 0 || !strings.Contains(errs, path+":8:4: not JSON") || !strings.Contains(errs, "nothing was changed") {
		t.Errorf("connect to a file that is not JSONC: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != bad {
		t.Errorf("the file was changed:\n%s", b)
	}
	if backups, _ := filepath.Glob(path + ".nerve-backup-*"); len(backups) != 1 {
		t.Errorf("backups %v; want the first connect's only", backups)
	}
}

// TestBinaryMCPConnectUnstable: a nerve that lives in a temp folder (as a
// test's, or a `go run` build's) is refused, with how to install, and no
// config is written.
func TestBinaryMCPConnectUnstable(t *testing.T) {
	n := newRealNerve(t)
	home := t.TempDir()
	n.Env = append(os.Environ(), "NERVE_HOME="+n.home, "HOME="+home, "TMPDIR="+filepath.Dir(filepath.Dir(n.bin)))
	out, errs, code := n.Run("mcp", "connect", "claude-code")
	if code != 1 || !strings.Contains(errs, "is in a temp folder") || !strings.Contains(errs, "go install github.com/nerve-dev/nerve/cmd/nerve@latest") {
		t.Errorf("connect from a temp folder: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); !os.IsNotExist(err) {
		t.Errorf("a config was written: %v", err)
	}
}

func mustRaw(v any) []byte { b, _ := json.Marshal(v); return b }

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestBinaryMCPConnectMove: --move imports the client's servers into nerve
// and removes them from the client, which keeps only nerve (and what nerve
// could not take).
func TestBinaryMCPConnectMove(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	home := t.TempDir()
	n.Env = connectEnv(n, home)
	path := filepath.Join(home, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	before, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		"fx":     map[string]any{"command": server},
		"broken": map[string]any{"command": "/nonexistent/server"},
	}}, "", "  ")
	os.WriteFile(path, before, 0o600)
	out, errs, code := n.Run("mcp", "connect", "cursor", "--move")
	if code != 1 || !strings.Contains(errs, "moved fx to nerve as node fx") || !strings.Contains(errs, "broken not moved") ||
		!strings.Contains(errs, "1 server of "+path+" not moved") {
		t.Fatalf("connect --move with a server that fails: exit %d, want 1\n%s%s", code, out, errs)
	}
	// The server that failed stays the client's: no node in ERROR for it.
	if ls := n.Must("node", "ls"); strings.Contains(ls, "broken") || !strings.Contains(ls, "fx") {
		t.Errorf("the session after --move:\n%s", ls)
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
	if _, errs, code := n.Run("mcp", "connect", "cursor", "--move"); code != 1 || !strings.Contains(errs, "already connected") || !strings.Contains(errs, "broken not moved") {
		t.Errorf("second --move: exit %d %s", code, errs)
	}
	if ls := n.Must("node", "ls"); strings.Contains(ls, "broken") {
		t.Errorf("the session after a second --move:\n%s", ls)
	}
}
