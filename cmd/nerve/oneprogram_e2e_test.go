//go:build linux

package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestOneProgramWithoutGo: what `go build -o DIR/nerve ./cmd/nerve` makes
// is the whole of nerve. Alone in its folder, with no go command on PATH,
// it starts the daemon (itself), adds a node, answers `nerve call`, serves
// MCP (`nerve mcp serve`: initialize, tools/list) and runs the REPL.
func TestOneProgramWithoutGo(t *testing.T) {
	built := testutil.BuildBinary(t, "./cmd/nerve")
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "nerve")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// PATH holds bash (the default session's @bash node runs it) and sh,
	// nothing else.
	pathDir := t.TempDir()
	for _, prog := range []string{"bash", "sh"} {
		p, err := exec.LookPath(prog)
		if err != nil {
			t.Skipf("no %s: %v", prog, err)
		}
		if err := os.Symlink(p, filepath.Join(pathDir, prog)); err != nil {
			t.Fatal(err)
		}
	}
	home := testutil.SocketDir(t)
	env := []string{"NERVE_HOME=" + home, "HOME=" + home, "PATH=" + pathDir, "NO_COLOR=1", "TERM=xterm"}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, home
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("nerve %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		cmd := exec.Command(bin, "daemon", "stop")
		cmd.Env = env
		cmd.Run()
	})

	if out := run("version"); !strings.HasPrefix(out, "nerve ") {
		t.Errorf("nerve version: %q", out)
	}
	run("node", "add", "identity", "id") // starts the daemon
	if out := run("call", "@id", "identity", "text=hi"); out != "hi\n" {
		t.Errorf("nerve call: %q; want hi", out)
	}
	var st struct {
		Daemon struct{ PID int } `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(run("daemon", "status", "--json")), &st); err != nil || st.Daemon.PID == 0 {
		t.Fatalf("daemon status: %v", err)
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(st.Daemon.PID) + "/exe"); err != nil || exe != bin {
		t.Errorf("the daemon runs %q (%v); want this nerve, %s", exe, err, bin)
	}

	serve := exec.Command(bin, "mcp", "serve")
	serve.Env, serve.Dir = env, home
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "one-program-test", Version: "v1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: serve}, nil)
	if err != nil {
		t.Fatalf("nerve mcp serve: initialize: %v", err)
	}
	defer cs.Close()
	if cs.InitializeResult().ServerInfo.Name == "" {
		t.Error("nerve mcp serve: no server name in initialize's answer")
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("nerve mcp serve: tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "id.identity") {
		t.Errorf("nerve mcp serve lists %v; want id.identity among them", names)
	}

	term := tmux.Start(t, env, bin)
	term.WaitFor("default>", 20*time.Second)
	term.Line("@id identity text=from-the-repl")
	term.WaitForAfter("@id identity text=from-the-repl", "\nfrom-the-repl", 20*time.Second)
}
