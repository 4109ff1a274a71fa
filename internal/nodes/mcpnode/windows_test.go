//go:build windows

package mcpnode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestWindowsServerThroughShim starts a Windows build of the Go fixture
// server as npm has a package's server started: by a name that only
// PATHEXT makes a batch file (npm's cmd-shim) on the node's own PATH, in a
// folder whose name needs quoting, with arguments that cmd.exe would read
// as its syntax if they were not quoted for it. The tools are listed and
// called, and the process the server started ends with the node. It runs
// on Windows, and in CI under Wine (.ci/wine-exec).
func TestWindowsServerThroughShim(t *testing.T) {
	exe := testutil.BuildBinary(t, "./fixtures/mcpserver")
	bin := filepath.Join(testutil.TempDir(t), "npm bin (x86)")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// npm's cmd-shim, with the fixture for node and its script.
	shim := "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n" +
		"\"" + exe + "\" %*\r\n"
	if err := os.WriteFile(filepath.Join(bin, "nerve-fixture.cmd"), []byte(shim), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"a b", "x&y", "(z)", `C:\some dir\`, "^", "!", "a,b;c=d", ""}
	spec := stdioSpec("win", append([]string{"nerve-fixture", "--child"}, args...))
	spec.Env = map[string]string{"PATH": bin + ";" + os.Getenv("PATH")}
	n, err := newNode(spec, newEvents().env(), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tools, err := n.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "echo") || !slices.Contains(names, "process") {
		t.Fatalf("tools = %v; want echo and process among them", names)
	}
	const say = `hello & "goodbye" | %PATH% ^`
	in, _ := json.Marshal(map[string]string{"text": say})
	res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: in})
	if err != nil || text(t, res) != say {
		t.Fatalf("echo = %v, %v; want %q", res, err, say)
	}
	res, err = n.CallTool(ctx, &node.CallRequest{Tool: "process"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Pid, Child int
		Args       []string
	}
	if err := json.Unmarshal([]byte(text(t, res)), &got); err != nil {
		t.Fatalf("process said %q: %v", text(t, res), err)
	}
	if !slices.Equal(got.Args, args) {
		t.Errorf("the server got the arguments %q; want %q", got.Args, args)
	}
	if !testutil.ProcessAlive(got.Pid) || !testutil.ProcessAlive(got.Child) {
		t.Fatalf("the server %d or its child %d is not running", got.Pid, got.Child)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessAlive(got.Pid) && !testutil.ProcessAlive(got.Child) },
		"the server and the process it started to end with the node")
}
