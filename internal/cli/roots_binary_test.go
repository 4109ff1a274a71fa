//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// TestBinaryFilesystemKeepsItsFolder is README's example through the real
// binary, run from / and from $HOME: server-filesystem limited to one
// folder keeps exactly that folder (nerve offered the node's cwd as roots,
// and the server replaced its folder with them).
func TestBinaryFilesystemKeepsItsFolder(t *testing.T) {
	n := newRealNerve(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("contents of a"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	fs := npmfix.ServerFilesystem(t, dir)
	for i, cwd := range []string{"/", home} {
		name := []string{"fsroot", "fshome"}[i]
		n.Dir = cwd
		n.Must(append([]string{"node", "add", "mcp", name, "--"}, fs...)...)
		out := n.Must("call", "@"+name, "list_allowed_directories")
		if got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "Allowed directories:")); got != dir {
			t.Errorf("from %s: list_allowed_directories = %q, want exactly %s", cwd, out, dir)
		}
		if out := n.Must("call", "@"+name, "read_text_file", "path="+filepath.Join(dir, "a.txt")); !strings.Contains(out, "contents of a") {
			t.Errorf("from %s: read_text_file a.txt = %q", cwd, out)
		}
		out, errs, code := n.Run("call", "@"+name, "read_text_file", "path=/etc/hostname")
		if code != ExitToolError || !strings.Contains(out+errs, "Access denied") {
			t.Errorf("from %s: reading /etc/hostname: exit %d, %q %q; want exit %d, access denied", cwd, code, out, errs, ExitToolError)
		}
	}
	// A configured root is offered, and a server with no folder of its own
	// takes it.
	n.Dir = "/"
	n.Must(append([]string{"node", "add", "mcp", "fsroots", "--root", dir, "--"}, npmfix.ServerFilesystem(t)...)...)
	// The server applies roots in the background after initialize.
	testutil.WaitFor(t, 20*time.Second, func() bool {
		return strings.Contains(n.Must("call", "@fsroots", "list_allowed_directories"), dir)
	}, "list_allowed_directories to show the --root folder")
}
