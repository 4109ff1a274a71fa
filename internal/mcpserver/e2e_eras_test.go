package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// goClient connects the Go SDK's client, speaking version, to
// `nerve mcp serve ARGS` (stdio) of h.
func (h *nerveHome) goClient(t *testing.T, version string, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(h.bin, append([]string{"mcp", "serve"}, args...)...)
	cmd.Env = h.env()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-" + version, Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("nerve mcp serve %v in %s: %v", args, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("nerve mcp serve %v: negotiated %s, want %s", args, got, version)
	}
	return cs
}

// goHTTPClient connects the Go SDK's client, speaking version, to url.
func goHTTPClient(t *testing.T, url, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-http-" + version, Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s in %s: %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// tsClient runs testdata/tsclient.mjs: the TypeScript SDK's client lists
// the tools of target and calls tool.
func tsClient(t *testing.T, mode, target, token, tool, args string) (protocol string, tools []string, text string) {
	t.Helper()
	sdk := filepath.Join(npmfix.Dir(t, npmfix.FixtureNPM), "node_modules", "@modelcontextprotocol", "sdk")
	node, err := exec.LookPath("node")
	testutil.RequireE2E(t, "node (Node.js)", err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	script, _ := filepath.Abs("testdata/tsclient.mjs")
	cmd := exec.CommandContext(ctx, node, script, sdk, mode, target, tool, args)
	cmd.Env = append(os.Environ(), "NERVE_TOKEN="+token)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the TypeScript SDK client (%s %s): %v\n%s%s", mode, target, err, out, stderr)
	}
	var r struct {
		Protocol string   `json:"protocol"`
		Tools    []string `json:"tools"`
		Text     string   `json:"text"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the TypeScript SDK client printed %s: %v", out, err)
	}
	return r.Protocol, r.Tools, r.Text
}

// TestErasRealPeers: the real daemon serves clients of both eras — the Go
// SDK's client in 2026-07-28 and in 2025-11-25, the TypeScript SDK's
// client (2025-11-25) — on `nerve mcp serve` and on the HTTP endpoint,
// with the state of --tools, --discover and --code in the command line or
// the URL; an MCP server's elicitation in the middle of a call reaches a
// client of either era, and its answer the server.
func TestErasRealPeers(t *testing.T) {
	h := newNerveHome(t)
	h.run(t, "node", "add", "mcp", "fx", "--", testutil.BuildBinary(t, "./fixtures/mcpserver"))
	url, token := h.url(t)
	answer := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "from Go"}}, nil
	}}

	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("stdio "+version, func(t *testing.T) {
			cs := h.goClient(t, version, nil)
			if got := names(t, cs); !slices.Contains(got, "echo.identity") || !slices.Contains(got, "fx.echo") {
				t.Errorf("tools %v, want echo.identity and fx.echo", got)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "hi " + version}})
			if err != nil || text(res) != "hi "+version {
				t.Errorf("call: %v %v", err, res)
			}
			if got := names(t, h.goClient(t, version, nil, "--tools", "echo")); !slices.Equal(got, []string{"echo.identity"}) {
				t.Errorf("--tools echo: %v", got)
			}
			if got := names(t, h.goClient(t, version, nil, "--discover")); !slices.Equal(got, []string{"call_tool", "describe_tool", "search_tools"}) {
				t.Errorf("--discover: %v", got)
			}
			code := h.goClient(t, version, nil, "--code", "--tools", "echo")
			res, err = code.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": `echo.identity(text="scripted")`}})
			if err != nil || !strings.Contains(text(res), "scripted") {
				t.Errorf("--code: %v %v", err, res)
			}
			node := h.goClient(t, version, answer, "--node", "fx")
			res, err = node.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "who?"}})
			if err != nil || !strings.Contains(text(res), "user answered: from Go") {
				t.Errorf("--node fx elicit: %v %v", err, res)
			}
		})
		t.Run("http "+version, func(t *testing.T) {
			cs := goHTTPClient(t, url+"?tools=echo", token, version, nil)
			if got := names(t, cs); !slices.Equal(got, []string{"echo.identity"}) {
				t.Errorf("?tools=echo: %v", got)
			}
			if got := names(t, goHTTPClient(t, url+"?discover=1", token, version, nil)); !slices.Equal(got, []string{"call_tool", "describe_tool", "search_tools"}) {
				t.Errorf("?discover=1: %v", got)
			}
			node := goHTTPClient(t, url+"/node/fx", token, version, answer)
			res, err := node.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "who?"}})
			if err != nil || !strings.Contains(text(res), "user answered: from Go") {
				t.Errorf("node fx elicit: %v %v", err, res)
			}
		})
	}

	t.Run("TypeScript SDK", func(t *testing.T) {
		stdio, _ := json.Marshal([]string{"env", "NERVE_HOME=" + h.home, h.bin, "mcp", "serve", "--node", "fx"})
		for _, tc := range []struct{ mode, target string }{{"stdio", string(stdio)}, {"http", url + "/node/fx"}} {
			protocol, tools, got := tsClient(t, tc.mode, tc.target, token, "elicit", `{"message":"who?"}`)
			if !slices.Contains(tools, "echo") || !strings.Contains(got, "user answered: from TypeScript") {
				t.Errorf("%s: protocol %s, tools %v, answer %q", tc.mode, protocol, tools, got)
			}
		}
		_, tools, got := tsClient(t, "http", url+"?tools=echo", token, "echo.identity", `{"text":"from TS"}`)
		if !slices.Equal(tools, []string{"echo.identity"}) || got != "from TS" {
			t.Errorf("http ?tools=echo: %v %q", tools, got)
		}
	})
}

// rawTask speaks the tasks extension to url over plain HTTP.
func rawTask(t *testing.T, url, token, method, name, params string) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, method, params)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "data:"))
		var m struct {
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
			if m.Error != nil {
				t.Fatalf("%s: %v", method, m.Error)
			}
			return m.Result
		}
	}
	t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	return nil
}

// untilStatus polls a task, as its client does, until it has status want.
func untilStatus(t *testing.T, url, token, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		task := rawTask(t, url, token, "tasks/get", id, fmt.Sprintf(`"taskId":%q`, id))
		if task["status"] == want {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v after 30s, want %s: %v", id, task["status"], want, task)
		}
		time.Sleep(50 * time.Millisecond) // the client's polling interval
	}
}

// TestTaskAcrossDaemonRestart: a graph's run started as a task over the
// endpoint outlives `nerve daemon stop`: the daemon that starts next takes
// it up, and its client, polling the same task id on the new endpoint,
// answers its gate and reads its result.
func TestTaskAcrossDaemonRestart(t *testing.T) {
	h := newNerveHome(t)
	def := filepath.Join(h.home, "release.yaml")
	if err := os.WriteFile(def, []byte("inputs: {v: string}\nsteps:\n  first: {call: echo.identity, args: {text: \"building ${inputs.v}\"}}\n  ok: {ask: \"ship ${inputs.v}?\", after: [first]}\n  ship: {call: echo.identity, args: {text: \"shipped ${inputs.v}: ${steps.ok.text}\"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(t, "graph", "add", "release", "--from", def)
	url, token := h.url(t)
	created := rawTask(t, url, token, "tools/call", "release.run", `"name":"release.run","arguments":{"v":"v7"}`)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("a graph's run: %v, want a task", created)
	}
	untilStatus(t, url, token, id, "input_required")

	h.run(t, "daemon", "stop")
	url, token = h.url(t) // starts the daemon again, on another port
	asked := untilStatus(t, url, token, id, "input_required")
	qs, _ := asked["inputRequests"].(map[string]any)
	for key := range qs {
		rawTask(t, url, token, "tasks/update", id, fmt.Sprintf(`"taskId":%q,"inputResponses":{%q:{"action":"accept","content":{"answer":"yes"}}}`, id, key))
	}
	done := untilStatus(t, url, token, id, "completed")
	res, _ := json.Marshal(done["result"])
	if !strings.Contains(string(res), "shipped v7: yes") {
		t.Errorf("result %s, want the run's output", res)
	}
	if out := h.run(t, "graph", "runs", "release"); !strings.Contains(out, "finished") {
		t.Errorf("nerve graph runs release:\n%s", out)
	}
}
