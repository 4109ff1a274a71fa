//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryNodeStopStart: `nerve node stop` ends the server but keeps the
// node, its settings and its catalogue; its tools stay in the session's
// list (issue 27), a call is refused naming `nerve node start`, and a
// daemon restart leaves
// it stopped with no server started; `nerve node start` brings it back.
func TestBinaryNodeStopStart(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "fx", "--timeout", "7s", "--", server)
	n.Must("node", "add", "identity", "echo")
	pid := daemonPID(t, n)
	if len(childrenRunning(pid, server)) == 0 {
		t.Fatal("the mcp server is not running after node add")
	}
	if out := n.Must("node", "stop", "fx"); out != "fx is STOPPED\n" {
		t.Errorf("node stop: %q", out)
	}
	if kids := childrenRunning(pid, server); len(kids) != 0 {
		t.Errorf("node stop left the server running: pids %v", kids)
	}
	stoppedRow := regexp.MustCompile(`(?m)^fx\s+mcp\s+STOPPED\b`)
	check := func(when string) {
		t.Helper()
		if out := n.Must("node", "ls"); !stoppedRow.MatchString(out) {
			t.Errorf("%s: node ls does not show fx STOPPED:\n%s", when, out)
		}
		if out := n.Must("tools"); !strings.Contains(out, "fx.echo") {
			t.Errorf("%s: the stopped node's tools left the list:\n%s", when, out)
		}
		_, errs, code := n.Run("call", "@fx", "echo", "text=x")
		if code == 0 || !strings.Contains(errs, "STOPPED") || !strings.Contains(errs, "nerve node start fx") {
			t.Errorf("%s: a call to the stopped node: exit %d %q", when, code, errs)
		}
		if out := n.Must("node", "info", "fx"); !strings.Contains(out, "7s") {
			t.Errorf("%s: the node's settings are gone:\n%s", when, out)
		}
	}
	check("after node stop")
	n.Must("daemon", "stop")
	check("after a daemon restart")
	if kids := childrenRunning(daemonPID(t, n), server); len(kids) != 0 {
		t.Errorf("the restarted daemon started the stopped node's server: pids %v", kids)
	}
	if out := n.Must("node", "start", "fx"); out != "fx is READY\n" {
		t.Errorf("node start: %q", out)
	}
	if out := n.Must("call", "@fx", "echo", "text=back"); out != "back\n" {
		t.Errorf("a call after node start: %q", out)
	}
	n.Must("daemon", "stop")
	if out := n.Must("call", "@fx", "echo", "text=still"); out != "still\n" {
		t.Errorf("a call after node start and a daemon restart: %q", out)
	}
	_, errs, code := n.Run("node", "stop", "nope")
	if code == 0 || !strings.Contains(errs, `no node "nope"`) {
		t.Errorf("node stop of an unknown node: exit %d %q", code, errs)
	}
	if _, errs, code := n.Run("node", "start"); code != ExitUsage || !strings.Contains(errs, "needs at least one NAME") {
		t.Errorf("node start with no name: exit %d %q", code, errs)
	}
}

// childrenRunning returns the pids of pid's children whose command line
// names bin.
func childrenRunning(pid int, bin string) []int {
	var out []int
	for _, kid := range testutil.ChildrenOf(pid) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kid))
		if strings.Contains(string(cmd), bin) {
			out = append(out, kid)
		}
	}
	return out
}

// TestBinaryImportDisabled: a server its config turns off ("disabled":
// true, "enabled": false) is imported STOPPED, its process never started,
// and a daemon restart leaves it so; `nerve node start` starts it. pflow's
// "transport" and "env_passthrough" are read, not dropped.
func TestBinaryImportDisabled(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	js, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"on":   map[string]any{"command": server, "transport": "stdio", "env_passthrough": []string{"NERVE_TEST_PASS"}},
		"off":  map[string]any{"command": server, "disabled": true},
		"off2": map[string]any{"command": server, "enabled": false},
	}})
	if err := os.WriteFile(cfg, js, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := n.Run("mcp", "import", cfg, "--dry-run")
	if code != 0 || strings.Count(out, "(disabled: added stopped)") != 2 {
		t.Errorf("import --dry-run: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = n.Run("mcp", "import", cfg)
	if code != 0 || !strings.Contains(out, "added off: STOPPED, as the file disables it (`nerve node start off` starts it)") ||
		!strings.Contains(out, "added off2: STOPPED") || !strings.Contains(out, "added on: READY") {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, `server "off" is disabled in the file`) {
		t.Errorf("import says nothing of the disabled server:\n%s", errs)
	}
	pid := daemonPID(t, n)
	if kids := childrenRunning(pid, server); len(kids) != 1 {
		t.Errorf("want only the enabled server running, got pids %v", kids)
	}
	if out := n.Must("node", "info", "on"); !strings.Contains(out, "NERVE_TEST_PASS") {
		t.Errorf("env_passthrough was dropped:\n%s", out)
	}
	n.Must("daemon", "stop")
	if out := n.Must("node", "ls"); !regexp.MustCompile(`(?m)^off\s+mcp\s+STOPPED\b`).MatchString(out) {
		t.Errorf("after a daemon restart the disabled server is not STOPPED:\n%s", out)
	}
	if out := n.Must("node", "start", "off"); out != "off is READY\n" {
		t.Errorf("node start off: %q", out)
	}
	if out := n.Must("call", "@off", "echo", "text=on now"); out != "on now\n" {
		t.Errorf("a call to the started server: %q", out)
	}
}
