//go:build unix

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// withoutVar returns env without key.
func withoutVar(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestBinaryClientEnvironment: ${VAR} in a node's spec resolves against the
// environment of the command that added it, even when the daemon was
// started earlier without it; the value is never saved. A node the
// restarted daemon brings back resolves against nerve's env file (nerve env
// set), and an unset variable's error says where it looked and what to run.
func TestBinaryClientEnvironment(t *testing.T) {
	n := newRealNerve(t)
	base := withoutVar(os.Environ(), "NERVE_TEST_TOKEN")
	n.Env = base
	n.Must("daemon", "start") // started without the variable

	n.Env = append(base, "NERVE_TEST_TOKEN=from-the-client")
	n.Must("node", "add", "bash", "sh", "--env", "TOKEN=${NERVE_TEST_TOKEN}")
	if out := n.Must("call", "@sh", "echo $TOKEN"); out != "from-the-client\n" {
		t.Errorf("TOKEN in a node added by a client that has it: %q", out)
	}
	state, err := os.ReadFile(filepath.Join(n.home, "sessions", "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "from-the-client") || !strings.Contains(string(state), "${NERVE_TEST_TOKEN}") {
		t.Errorf("the state file holds the value, or lost the reference:\n%s", state)
	}

	// The daemon restarts: the node comes back with no client.
	n.Env = base
	n.Must("daemon", "stop")
	// The next command starts the daemon, which restores the node in the
	// background: wait until its start has ended (CREATED, then STARTING,
	// then ERROR here) before reading why.
	testutil.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := n.Run("--json", "node", "info", "sh")
		return !strings.Contains(out, `"state": "CREATED"`) && !strings.Contains(out, `"state": "STARTING"`) &&
			!strings.Contains(out, `"state":"CREATED"`) && !strings.Contains(out, `"state":"STARTING"`)
	}, "the restored node's start to end")
	out, errs, _ := n.Run("node", "info", "sh")
	for _, want := range []string{"${NERVE_TEST_TOKEN} is not set in", "the daemon's", "nerve env set NERVE_TEST_TOKEN="} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("node info of a node whose variable is not set lacks %q:\n%s%s", want, out, errs)
		}
	}
	n.Must("env", "set", "NERVE_TEST_TOKEN=from-the-file")
	n.Must("node", "restart", "sh")
	if out := n.Must("call", "@sh", "echo $TOKEN"); out != "from-the-file\n" {
		t.Errorf("TOKEN from the env file: %q", out)
	}
	if out := n.Must("env", "ls"); strings.Contains(out, "from-the-file") || !strings.Contains(out, "NERVE_TEST_TOKEN") {
		t.Errorf("env ls shows the value or not the key:\n%s", out)
	}
}

// TestBinaryServeFromBareEnvironment: an app with a bare environment
// (env -i) starts `nerve mcp serve`, which starts the daemon: the daemon
// takes the login shell's PATH, so a node whose command is only on that
// PATH starts. Before, every such node went ERROR (command not found).
func TestBinaryServeFromBareEnvironment(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	home := t.TempDir()
	tools := filepath.Join(home, "tools")
	os.MkdirAll(tools, 0o700)
	if err := os.Symlink(server, filepath.Join(tools, "my-mcp-server")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".profile"), []byte(`export PATH="`+tools+`:$PATH"`+"\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(`. "$HOME/.profile"`+"\n"), 0o600)

	n.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"))
	n.Must("node", "add", "mcp", "mine", "--", "my-mcp-server")
	n.Must("daemon", "stop")

	n.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	c := mcp.NewClient(&mcp.Implementation{Name: "bare-app"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range res.Tools {
		found = found || strings.HasPrefix(tl.Name, "mine.")
	}
	if !found {
		n.Env = nil
		out, errs, _ := n.Run("node", "info", "mine")
		t.Errorf("node mine has no tools through nerve mcp serve started from env -i:\n%s%s", out, errs)
	}
}
