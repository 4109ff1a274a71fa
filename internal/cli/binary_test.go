//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryKinds drives the real nerve binary and its daemon: the flags,
// exit codes and files a person (or a script) sees.
func TestBinaryKinds(t *testing.T) {
	nerve := testutil.BuildBinary(t, "./cmd/nerve")
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	fakeClaude := testutil.BuildBinary(t, "./fixtures/fakeclaude")
	// A short folder: a Unix socket path must stay under ~100 bytes.
	home, err := os.MkdirTemp("", "nk")
	if err != nil {
		t.Fatal(err)
	}
	p, err := paths.FromEnv(func(k string) string {
		if k == "NERVE_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(nerve, args...)
		cmd.Env = append(os.Environ(), "NERVE_HOME="+home, "NERVE_SESSION=")
		cmd.Dir = home
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running nerve %v: %v", args, err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	t.Cleanup(func() {
		run("daemon", "stop")
		os.RemoveAll(home)
	})

	// What a claude node of a killed daemon left behind.
	stale := filepath.Join(p.Sessions, "default", "nodes", "cc", "claude-mcp-123.json")
	if err := os.MkdirAll(filepath.Dir(stale), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(stale, []byte("{}"), 0o600)

	record := filepath.Join(home, "record")
	os.MkdirAll(record, 0o700)

	conf := filepath.Join(home, "servers.json")
	os.WriteFile(conf, []byte(`{"mcpServers": {"Good": {"command": "`+server+`"}, "bad": {"command": "/nonexistent/x"}}}`), 0o600)

	steps := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{args: []string{"node", "add", "mcp", "fx", "--transport", "stdio", "--timeout", "30s", "--", server}, stdout: "mcp fx is READY"},
		{args: []string{"resources", "fx"}, stdout: "fixture://text/hello"},
		{args: []string{"read", "fx", "fixture://text/hello"}, stdout: "hello from the nerve fixture\n"},
		{args: []string{"read", "fx", "fixture://blob/bytes"}, stdout: filepath.Join(p.State, "resources", "fx-bytes-")},
		{args: []string{"prompt", "fx", "greet", "name=Ann"}, stdout: "Greet Ann."},
		{args: []string{"node", "reset", "fx"}, code: ExitUsage, stderr: "@fx has no conversation to reset"},
		{args: []string{"node", "add", "mcp", "y", "--model", "m", "--", server}, code: ExitUsage, stderr: "--model is a flag of llm nodes"},
		{args: []string{"node", "add", "llm", "x", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key", "sk-literal"}, code: ExitUsage, stderr: "--api-key is a literal key"},
		{args: []string{"node", "add", "llm", "--help"}, stdout: "--api-key '${VAR}'"},
		{args: []string{"mcp", "import", conf}, code: ExitFailed, stdout: `added good (server "Good")`, stderr: "bad failed"},
		{args: []string{"node", "add", "claude", "cl", "--session-tools", "--env", "FAKECLAUDE_HOME=" + filepath.Join(home, "fc"),
			"--env", "FAKECLAUDE_RECORD=" + record, "--", fakeClaude}, stdout: "claude cl is READY"},
		{args: []string{"call", "@cl", "hi"}, stdout: "You said: hi"},
		{args: []string{"__complete", "--", "node", "add", "mcp", "fs", "--transport", ""}, stdout: "http\nsse\nstdio\n"},
	}
	for _, st := range steps {
		out, errs, code := run(st.args...)
		name := strings.Join(st.args, " ")
		if code != st.code {
			t.Errorf("nerve %s: exit %d; want %d\nstdout: %s\nstderr: %s", name, code, st.code, out, errs)
		}
		if !strings.Contains(out, st.stdout) {
			t.Errorf("nerve %s: stdout %q; want %q", name, out, st.stdout)
		}
		if !strings.Contains(errs, st.stderr) {
			t.Errorf("nerve %s: stderr %q; want %q", name, errs, st.stderr)
		}
	}
	// --session-tools gave Claude the session's MCP endpoint as server "nerve".
	recs, _ := filepath.Glob(filepath.Join(record, "*.json"))
	found := false
	for _, f := range recs {
		var rec struct {
			MCPConfigs []struct {
				MCPServers map[string]struct{ URL string } `json:"mcpServers"`
			} `json:"mcp_configs"`
		}
		b, _ := os.ReadFile(f)
		if json.Unmarshal(b, &rec) == nil {
			for _, c := range rec.MCPConfigs {
				found = found || strings.HasPrefix(c.MCPServers["nerve"].URL, "http://127.0.0.1:")
			}
		}
	}
	if !found {
		t.Errorf("no Claude process got the session's endpoint as MCP server \"nerve\" (records: %v)", recs)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the daemon left %s behind (stat: %v); claude.CleanupStale should remove it at start", stale, err)
	}
}
