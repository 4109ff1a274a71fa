//go:build unix

package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// nodeStates returns every node's state from `nerve node ls --json`.
func (h *nerveHome) nodeStates(t *testing.T) map[string]string {
	t.Helper()
	var infos []struct{ ID, State string }
	if err := json.Unmarshal([]byte(h.run(t, "--json", "node", "ls")), &infos); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range infos {
		out[in.ID] = in.State
	}
	return out
}

// TestInspectorDiscover: `nerve mcp serve --discover` (and ?discover=1)
// seen through the MCP Inspector CLI with real servers restored lazily
// after a daemon restart: at most five tools listed, search_tools finds
// fs.read_text_file for "read a text file" without starting anything, and
// call_tool runs it, starting fs and only fs (issue 19).
func TestInspectorDiscover(t *testing.T) {
	h := newNerveHome(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, []byte("hello from a text file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(t, append([]string{"node", "add", "mcp", "fs", "--"}, npmfix.ServerFilesystem(t, dir)...)...)
	h.run(t, append([]string{"node", "add", "mcp", "ev", "--"}, npmfix.ServerEverything(t)...)...)
	h.run(t, "daemon", "stop")
	// The next command starts the daemon again; fs and ev come back lazily.
	st := h.nodeStates(t)
	if st["fs"] == "READY" || st["ev"] == "READY" {
		t.Fatalf("states after the restart %v: want fs and ev lazy (not running)", st)
	}
	// `nerve mcp url --discover` puts the flag in the URL (?discover=1).
	lines := strings.Fields(h.run(t, "mcp", "url", "--discover"))
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "?discover=1") {
		t.Fatalf("nerve mcp url --discover printed %q", lines)
	}
	for _, target := range [][]string{
		{h.bin, "mcp", "serve", "-e", "NERVE_HOME=" + h.home, "--discover"},
		{lines[0], "--transport", "http", "--header", "Authorization: Bearer " + lines[1]},
	} {
		if got := inspectorTools(t, target); len(got) > 5 || !slices.Equal(got, []string{"call_tool", "describe_tool", "search_tools"}) {
			t.Errorf("tools/list with discovery = %v, want the three meta-tools", got)
		}
	}
	stdio := []string{h.bin, "mcp", "serve", "-e", "NERVE_HOME=" + h.home, "--discover"}
	out := inspector(t, append(stdio, "--method", "tools/call", "--tool-name", "search_tools", "--tool-arg", "query=read a text file")...)
	if !strings.Contains(out, "fs.read_text_file") {
		t.Errorf("search_tools \"read a text file\" did not find fs.read_text_file:\n%s", out)
	}
	if st := h.nodeStates(t); st["fs"] == "READY" || st["ev"] == "READY" {
		t.Errorf("states after searching %v: a search must not start servers", st)
	}
	args, _ := json.Marshal(map[string]string{"path": file})
	out = inspector(t, append(stdio, "--method", "tools/call", "--tool-name", "call_tool",
		"--tool-arg", "name=fs.read_text_file", "--tool-arg", "arguments="+string(args))...)
	if !strings.Contains(out, "hello from a text file") || strings.Contains(out, `"isError": true`) {
		t.Errorf("call_tool fs.read_text_file:\n%s", out)
	}
	if st := h.nodeStates(t); st["fs"] != "READY" || st["ev"] == "READY" {
		t.Errorf("states after call_tool %v: want fs READY and ev still not running", st)
	}

	// The same through a Go SDK client on the HTTP endpoint: it finds
	// ev's echo and calls it, starting ev.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: lines[0], HTTPClient: &http.Client{Transport: bearerRT(lines[1])},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(lt.Tools) > 5 {
		t.Fatalf("SDK tools/list: %v, %d tools", err, len(lt.Tools))
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "read a text file"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), `"name":"fs.read_text_file"`) {
		t.Errorf("SDK search_tools: %v %v", err, textOf(res))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "ev.echo", "arguments": map[string]any{"message": "from the sdk"}}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "from the sdk") {
		t.Errorf("SDK call_tool ev.echo: %v %v", err, textOf(res))
	}
	if st := h.nodeStates(t); st["ev"] != "READY" {
		t.Errorf("ev is %s after call_tool ev.echo, want READY", st["ev"])
	}
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestInspectorManage: `nerve mcp serve --manage` through the MCP
// Inspector CLI: a server killed behind nerve's back shows in list_nodes
// as ERROR with the reason, and restart_node brings it back (issue 19).
func TestInspectorManage(t *testing.T) {
	h := newNerveHome(t)
	h.run(t, append([]string{"node", "add", "mcp", "ev", "--"}, npmfix.ServerEverything(t)...)...)
	var d struct {
		Info struct {
			Details struct {
				PID int `json:"pid"`
			} `json:"details"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(h.run(t, "--json", "node", "info", "ev")), &d); err != nil || d.Info.Details.PID == 0 {
		t.Fatalf("node info ev: %v %+v", err, d)
	}
	if err := syscall.Kill(d.Info.Details.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { return h.nodeStates(t)["ev"] == "ERROR" }, "ev to go ERROR after its server was killed")
	stdio := []string{h.bin, "mcp", "serve", "-e", "NERVE_HOME=" + h.home, "--manage"}
	if got := inspectorTools(t, stdio); !slices.Contains(got, "list_nodes") || !slices.Contains(got, "restart_node") {
		t.Fatalf("tools/list with --manage = %v", got)
	}
	out := inspector(t, append(stdio, "--method", "tools/call", "--tool-name", "list_nodes")...)
	if !strings.Contains(out, `\"id\":\"ev\"`) || !strings.Contains(out, `\"state\":\"ERROR\"`) || !strings.Contains(out, "signal") {
		t.Errorf("list_nodes does not show ev in ERROR with its reason:\n%s", out)
	}
	out = inspector(t, append(stdio, "--method", "tools/call", "--tool-name", "restart_node", "--tool-arg", "node=ev")...)
	if !strings.Contains(out, `\"state\":\"READY\"`) {
		t.Errorf("restart_node ev:\n%s", out)
	}
	if st := h.nodeStates(t); st["ev"] != "READY" {
		t.Errorf("ev is %s after restart_node", st["ev"])
	}
}
