//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryImportAfterFix: a server that failed is fixed in the file and
// imported again: its failed node is replaced, as docs/cli.md promises;
// the import said "another spec" (issue 27 item 6). A working node with
// another spec is still left alone.
func TestBinaryImportAfterFix(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	conf := filepath.Join(n.home, ".mcp.json")
	write := func(cmd string, more ...string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(`{"mcpServers": {"srv": {"command": "`+cmd+`"`+strings.Join(more, "")+`}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(n.home, "nonexistent-server"))
	if _, errs, code := n.Run("mcp", "import", conf); code != ExitFailed || !strings.Contains(errs, "srv failed") {
		t.Fatalf("import of a broken server: exit %d, %q", code, errs)
	}
	write(server)
	out, errs, code := n.Run("mcp", "import", conf)
	if code != 0 || !strings.HasPrefix(out, "replaced srv, which had failed: READY with ") {
		t.Fatalf("import after the fix: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if out := n.Must("call", "@srv", "echo", "text=fixed"); out != "fixed\n" {
		t.Errorf("the replaced node: %q", out)
	}
	if out := n.Must("mcp", "import", conf); !strings.HasPrefix(out, "skipped srv: already in the session with the same spec") {
		t.Errorf("the third import: %q", out)
	}
	// A node that works is not replaced by another spec.
	write(server, `, "args": ["--many", "3"]`)
	if _, errs, code := n.Run("mcp", "import", conf); code != ExitFailed || !strings.Contains(errs, `already has a node "srv" with another spec`) {
		t.Errorf("import over a working node with another spec: exit %d, %q", code, errs)
	}
}

// TestBinaryImportRefusesNearMissKey: a server whose unknown key is a near
// miss of one that matters ("arg") is not imported, with did-you-mean and
// its line; nerve started it without its arguments and it failed after the
// 30 s start timeout (issue 27 item 6). The other servers are imported.
func TestBinaryImportRefusesNearMissKey(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	conf := filepath.Join(n.home, ".mcp.json")
	if err := os.WriteFile(conf, []byte(`{"mcpServers": {
  "nd": {"command": "node", "arg": ["/tmp/server.js"]},
  "ok": {"command": "`+server+`"}
}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := n.Run("mcp", "import", conf)
	want := `.mcp.json:2:29: server "nd": unknown key "arg" — did you mean "args"? nerve would start the server without its arguments: rename the key`
	if code != ExitFailed || !strings.Contains(errs, want) || !strings.Contains(out, "added ok: READY") {
		t.Errorf("import: exit %d\nstdout: %s\nstderr: %s\nwant %q", code, out, errs, want)
	}
	if ls := n.Must("node", "ls"); strings.Contains(ls, "nd ") {
		t.Errorf("the refused server became a node:\n%s", ls)
	}
}
