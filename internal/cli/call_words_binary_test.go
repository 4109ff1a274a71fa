//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// TestBinaryCallKeepsWords: each word the shell hands `nerve call` stays
// one word. nerve joined argv with spaces and parsed it again, so
// message="first step", content="it's fine" and echo "a   b" broke.
// Arguments may also come as JSON on stdin.
func TestBinaryCallKeepsWords(t *testing.T) {
	n := newRealNerve(t)
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	n.Must(append([]string{"node", "add", "mcp", "every", "--"}, npmfix.ServerEverything(t)...)...)
	n.Must(append([]string{"node", "add", "mcp", "fs", "--"}, npmfix.ServerFilesystem(t, dir)...)...)
	n.Must("node", "add", "bash", "sh")

	if out := n.Must("call", "@every", "echo", "message=first step"); !strings.Contains(out, "Echo: first step") {
		t.Errorf(`message="first step": %q`, out)
	}
	file := filepath.Join(dir, "a.txt")
	n.Must("call", "@fs", "write_file", "path="+file, "content=it's fine")
	if b, _ := os.ReadFile(file); string(b) != "it's fine" {
		t.Errorf(`content="it's fine" wrote %q`, b)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"echo", "a   b"}, "a   b\n"},
		{[]string{"echo", "it's", "$HOME", `x"y`, "*.none"}, "it's $HOME x\"y *.none\n"},
		{[]string{"printf", "%s|", "one word", ""}, "one word||\n"},
	} {
		if out := n.Must(append([]string{"call", "@sh"}, c.argv...)...); out != c.want {
			t.Errorf("nerve call @sh %q = %q, want %q", c.argv, out, c.want)
		}
	}

	// JSON on stdin: with -, and for a tool that needs arguments and got none.
	n.Stdin = `{"message": "from stdin"}`
	if out := n.Must("call", "@every", "echo", "-"); !strings.Contains(out, "Echo: from stdin") {
		t.Errorf("echo - with JSON on stdin: %q", out)
	}
	if out := n.Must("call", "@every", "echo"); !strings.Contains(out, "Echo: from stdin") {
		t.Errorf("echo with JSON on stdin and no arguments: %q", out)
	}
	n.Stdin = "echo text for a single-tool node"
	if out := n.Must("call", "@sh", "-"); out != "text for a single-tool node\n" {
		t.Errorf("@sh - with text on stdin: %q", out)
	}
	n.Stdin = ""
	_, errs, code := n.Run("call", "@every", "echo")
	if code != ExitUsage || !strings.Contains(errs, "message") {
		t.Errorf("echo with no arguments and empty stdin: exit %d, %q; want a usage error naming message", code, errs)
	}
}

// TestBinaryCallToNodeInError: after `nerve call @sh exit 3` the bash node
// is ERROR, and the next call says so and how to restart it — not that the
// tool is unknown.
func TestBinaryCallToNodeInError(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "bash", "sh")
	n.Run("call", "@sh", "exit", "3")
	_, errs, code := n.Run("call", "@sh", "echo", "hi")
	if code != ExitFailed || !strings.Contains(errs, `node "sh" is ERROR (bash exited with status 3)`) || !strings.Contains(errs, "`nerve node restart sh`") {
		t.Errorf("a call to a node in ERROR: exit %d, %q", code, errs)
	}
	n.Must("node", "restart", "sh")
	if out := n.Must("call", "@sh", "echo", "hi"); out != "hi\n" {
		t.Errorf("after a restart: %q", out)
	}
}
