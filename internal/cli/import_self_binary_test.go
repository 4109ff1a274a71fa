//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryImportSkipsNerveItself imports a Claude-style config that holds
// nerve's own MCP server (as the docs tell people to add it) next to a real
// one, twice: nerve is skipped with a notice and the tool count stays the
// same. Before, the import added nerve to itself and every import grew the
// tool list (nerve.nerve.nerve.echo.identity). A node added by hand that
// turns out to be nerve is refused when it connects.
func TestBinaryImportSkipsNerveItself(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "identity", "echo")
	conf := filepath.Join(n.home, "claude.json")
	os.WriteFile(conf, []byte(`{"mcpServers": {
		"nerve": {"command": "`+n.bin+`", "args": ["mcp", "serve"], "env": {"NERVE_HOME": "`+n.home+`"}},
		"nerve-other": {"command": "nerve", "args": ["mcp", "serve", "-s", "other"]},
		"fx": {"command": "`+server+`"}
	}}`), 0o600)

	toolCount := func() int {
		out := n.Must("tools")
		return len(regexp.MustCompile(`(?m)^\S+\.\S+`).FindAllString(out, -1))
	}
	var counts []int
	for i := 0; i < 2; i++ {
		out, errs, code := n.Run("mcp", "import", conf)
		if code != 0 {
			t.Fatalf("import %d: exit %d\n%s%s", i+1, code, out, errs)
		}
		for _, name := range []string{"nerve", "nerve-other"} {
			if !strings.Contains(errs, "skipped "+name) || !strings.Contains(errs, "a session cannot contain nerve itself") {
				t.Errorf("import %d: no notice that %s was skipped:\n%s", i+1, name, errs)
			}
		}
		counts = append(counts, toolCount())
	}
	if counts[0] != counts[1] || counts[0] == 0 {
		t.Errorf("tool counts after two imports: %v, want the same", counts)
	}
	if out := n.Must("node", "ls"); regexp.MustCompile(`(?m)^nerve`).MatchString(out) {
		t.Errorf("a nerve node was added:\n%s", out)
	}
	out, errs, _ := n.Run("mcp", "import", conf, "--dry-run")
	if !strings.Contains(errs, "would skip nerve") || strings.Contains(out, "mcp serve") {
		t.Errorf("dry run does not show nerve skipped:\n%s%s", out, errs)
	}

	// Added by hand (through a symlink, so the name says nothing): the
	// node refuses its server when it says it is a nerve session.
	link := filepath.Join(n.home, "other-name")
	if err := os.Symlink(n.bin, link); err != nil {
		t.Fatal(err)
	}
	_, errs, code := n.Run("node", "add", "mcp", "self", "--env", "NERVE_HOME="+n.home, "--", link, "mcp", "serve")
	if code == 0 || !strings.Contains(errs, "node self's server is nerve itself (session default)") || !strings.Contains(errs, "`nerve node rm self`") {
		t.Errorf("node add mcp self -- nerve mcp serve: exit %d, %q", code, errs)
	}
	if c := toolCount(); c != counts[0] {
		t.Errorf("tool count after the refused node: %d, want %d", c, counts[0])
	}
}

// TestBinaryImportDryRunAndPlaces: a dry run exits 1 when a server would
// not be imported and warns of unset variables; with no FILE and no
// ./.mcp.json, import lists the configs found in the usual places.
func TestBinaryImportDryRunAndPlaces(t *testing.T) {
	n := newRealNerve(t)
	conf := filepath.Join(n.home, "mcp.json")
	os.WriteFile(conf, []byte(`{"mcpServers": {
		"gh": {"command": "gh-mcp", "env": {"TOKEN": "${NERVE_TEST_SURELY_UNSET}"}},
		"broken": {"args": ["no command"]}
	}}`), 0o600)
	out, errs, code := n.Run("mcp", "import", conf, "--dry-run")
	if code != ExitFailed || !strings.Contains(errs, "NERVE_TEST_SURELY_UNSET") || !strings.Contains(errs, "would not be imported") || !strings.Contains(out, "gh-mcp") {
		t.Errorf("dry run: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".cursor"), 0o700)
	os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}`), 0o600)
	n.Env = append(os.Environ(), "HOME="+home)
	n.Dir = t.TempDir()
	_, errs, code = n.Run("mcp", "import")
	if code != ExitUsage || !strings.Contains(errs, "nerve mcp import "+filepath.Join(home, ".cursor", "mcp.json")) || !strings.Contains(errs, "2 servers") {
		t.Errorf("import with no ./.mcp.json: exit %d, %q", code, errs)
	}
}

// TestBinaryImportShellOnlyVariable: a ${VAR} set only in the importing
// shell works now but not after a daemon restart: import says so and
// offers `nerve env set`; the node that then lacks it says how to set it
// (issue 22: import said nothing, and the mcp node's message lacked the
// hint a bash node gives).
func TestBinaryImportShellOnlyVariable(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	conf := filepath.Join(n.home, "m.json")
	os.WriteFile(conf, []byte(`{"mcpServers":{"fx":{"command":"`+server+`","env":{"TOKEN":"${NERVE_TEST_ONLY_HERE}"}}}}`), 0o600)
	n.Env = append(os.Environ(), "NERVE_TEST_ONLY_HERE=secret")
	_, errs, code := n.Run("mcp", "import", conf)
	if code != 0 || !strings.Contains(errs, "${NERVE_TEST_ONLY_HERE} of node fx comes from this shell only") || !strings.Contains(errs, "`nerve env set NERVE_TEST_ONLY_HERE=…`") {
		t.Fatalf("import: exit %d, stderr %q", code, errs)
	}
	n.Env = nil
	n.Must("daemon", "stop")
	_, errs, _ = n.Run("node", "restart", "fx") // the restarted daemon lacks it
	if !strings.Contains(errs, "${NERVE_TEST_ONLY_HERE} is not set in") || !strings.Contains(errs, "nerve env set NERVE_TEST_ONLY_HERE=") {
		t.Errorf("restart without the variable: %q", errs)
	}
	n.Must("env", "set", "NERVE_TEST_ONLY_HERE=secret")
	n.Env = append(os.Environ(), "NERVE_TEST_ONLY_HERE=secret")
	if _, errs, _ := n.Run("mcp", "import", "--dry-run", conf); strings.Contains(errs, "comes from this shell only") {
		t.Errorf("a variable kept in the env file is still noted: %q", errs)
	}
}
