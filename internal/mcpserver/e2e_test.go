package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// nerveHome is the real nerve binary with its own NERVE_HOME and daemon
// (stopped at the end of the test), holding one identity node "echo".
type nerveHome struct {
	bin, home string
}

func newNerveHome(t *testing.T) *nerveHome {
	t.Helper()
	home, err := os.MkdirTemp("", "nrv")
	if err != nil {
		t.Fatal(err)
	}
	h := &nerveHome{bin: testutil.BuildBinary(t, "./cmd/nerve"), home: home}
	t.Cleanup(func() {
		h.run(t, "daemon", "stop")
		os.RemoveAll(home)
	})
	h.run(t, "node", "add", "identity", "echo")
	return h
}

func (h *nerveHome) env() []string { return append(os.Environ(), "NERVE_HOME="+h.home) }

func (h *nerveHome) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nerve %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// url returns the session endpoint and token from `nerve mcp url`.
func (h *nerveHome) url(t *testing.T) (string, string) {
	t.Helper()
	lines := strings.Fields(h.run(t, "mcp", "url"))
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "http://127.0.0.1:") {
		t.Fatalf("nerve mcp url printed %q, want URL and token", lines)
	}
	return lines[0], lines[1]
}

func inspector(t *testing.T, args ...string) string {
	t.Helper()
	argv := append(npmfix.Inspector(t), args...)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestInspector lists and calls the session's tools with the MCP
// Inspector, over stdio (`nerve mcp serve`) and over streamable HTTP.
func TestInspector(t *testing.T) {
	h := newNerveHome(t)
	url, token := h.url(t)
	stdio := []string{h.bin, "mcp", "serve", "-e", "NERVE_HOME=" + h.home}
	http := []string{url, "--transport", "http", "--header", "Authorization: Bearer " + token}
	for _, tc := range []struct {
		name   string
		target []string
	}{
		{"stdio", stdio},
		{"http", http},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			if err := json.Unmarshal([]byte(jsonPart(inspector(t, append(tc.target, "--method", "tools/list")...))), &list); err != nil {
				t.Fatal(err)
			}
			// The default session also starts with @bash.
			if !slices.ContainsFunc(list.Tools, func(tl struct{ Name string }) bool { return tl.Name == "echo.identity" }) {
				t.Errorf("tools/list = %+v, want echo.identity among them", list.Tools)
			}
			out := inspector(t, append(tc.target, "--method", "tools/call", "--tool-name", "echo.identity", "--tool-arg", "text=hello inspector")...)
			var res struct {
				Content []struct{ Type, Text string } `json:"content"`
			}
			if err := json.Unmarshal([]byte(jsonPart(out)), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || res.Content[0].Text != "hello inspector" {
				t.Errorf("tools/call answered %s", out)
			}
		})
	}
}

// jsonPart drops the Inspector's deprecation banner before its JSON.
func jsonPart(s string) string {
	if i := strings.Index(s, "{"); i >= 0 {
		return s[i:]
	}
	return s
}

// TestClaudeCode: the real Claude Code CLI (offline) connects to nerve's
// endpoint, over HTTP and through `nerve mcp serve`, and lists the
// session's tools in its system/init event.
func TestClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("Claude Code: large install")
	}
	claude := npmfix.ClaudeCode(t)
	h := newNerveHome(t)
	url, token := h.url(t)
	dir := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"nerve":      map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer " + token}},
		"nervestdio": map[string]any{"command": h.bin, "args": []string{"mcp", "serve"}, "env": map[string]string{"NERVE_HOME": h.home}},
	}}
	data, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "hi", "--mcp-config", cfgFile, "--strict-mcp-config", "--output-format", "stream-json", "--verbose")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "DISABLE_AUTOUPDATER=1", "ANTHROPIC_API_KEY=")
	out, _ := cmd.Output() // it fails for want of a login, after init
	var init struct {
		Type, Subtype string
		Tools         []string
		MCPServers    []struct{ Name, Status string } `json:"mcp_servers"`
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if json.Unmarshal(sc.Bytes(), &init) == nil && init.Type == "system" && init.Subtype == "init" {
			break
		}
	}
	if init.Subtype != "init" {
		t.Fatalf("no system/init event from claude:\n%.2000s", out)
	}
	for _, name := range []string{"nerve", "nervestdio"} {
		if !slices.ContainsFunc(init.MCPServers, func(s struct{ Name, Status string }) bool { return s.Name == name && s.Status == "connected" }) {
			t.Errorf("server %q not connected: %+v", name, init.MCPServers)
		}
	}
	// Claude Code names MCP tools mcp__SERVER__TOOL and maps the dot of
	// echo.identity to '_' itself: dotted names need no --names llm.
	for _, tool := range []string{"mcp__nerve__echo_identity", "mcp__nervestdio__echo_identity"} {
		if !slices.Contains(init.Tools, tool) {
			t.Errorf("tool %q missing from Claude's tools: %v", tool, init.Tools)
		}
	}
}
