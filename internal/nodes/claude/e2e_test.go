package claude

// Contract tests against the real Claude Code CLI (fixtures/claude, about
// 360 MB, installed on first use). They run offline: with a throwaway HOME
// Claude has no login, so each turn prints its system/init event — which
// lists the MCP servers it connected and their tools — and then stops with
// "Not logged in". They skip where the package cannot be installed, and
// fail then under NERVE_REQUIRE_E2E=1.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// realEnv keeps Claude off the user's login, settings and updater.
func realEnv(home string) map[string]string {
	return map[string]string{
		"HOME": home, "DISABLE_AUTOUPDATER": "1", "ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": "",
		"XDG_CONFIG_HOME": home, "CLAUDE_CONFIG_DIR": "",
	}
}

func TestRealClaudeAcceptsTheFlagsNervePasses(t *testing.T) {
	claude := npmfix.ClaudeCode(t)
	cmd := exec.Command(claude, "--help")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DISABLE_AUTOUPDATER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude --help: %v\n%s", err, out)
	}
	help := string(out)
	argv, err := buildArgv([]string{"claude"}, launch{sessionID: "x", forkFrom: "y", mcpConfig: "f", strictMCP: true, permission: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	argv = append(argv, "--resume")
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "--") && !strings.Contains(help, a+" ") && !strings.Contains(help, a+",") {
			t.Errorf("claude --help does not list %s, which nerve passes", a)
		}
	}
	for _, m := range permissionModes {
		if !strings.Contains(help, `"`+m+`"`) {
			t.Errorf("claude --help does not list permission mode %q", m)
		}
	}
}

// sessionEndpoint serves a stand-in for the session's MCP endpoint: one
// tool, behind a bearer token, as the daemon's will be.
func sessionEndpoint(t *testing.T) Endpoint {
	srv := mcp.NewServer(&mcp.Implementation{Name: "nerve-session", Version: "test"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "sh__bash", Description: "run a command"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Command string `json:"command"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	const token = "test-token"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return Endpoint{URL: ts.URL + "/mcp", Token: token}
}

func TestRealClaudeConnectsTheMCPServersNerveGivesIt(t *testing.T) {
	claude := npmfix.ClaudeCode(t)
	mcpserver := testutil.BuildBinary(t, "./fixtures/mcpserver")
	ep := sessionEndpoint(t)
	home := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{"command": mcpserver}}})
	opts, _ := json.Marshal(Options{MCPConfig: string(cfg), StrictMCPConfig: true, SessionTools: true})
	dir := t.TempDir()
	var mu sync.Mutex
	var saved json.RawMessage
	spec := node.Spec{ID: "cc", Kind: Kind, Command: []string{claude}, Cwd: home, Env: realEnv(home), Options: opts}
	env := node.Env{Session: "default", Dir: dir, SaveState: func(s json.RawMessage) error {
		mu.Lock()
		saved = s
		mu.Unlock()
		return nil
	}, MCPEndpoint: func() (string, string, bool) { return ep.URL, ep.Token, true }}
	n, err := New(spec, env)
	if err != nil {
		t.Fatal(err)
	}
	cc := n.(*Node)
	t.Cleanup(func() { cc.Stop(context.Background()) })
	if err := cc.Start(context.Background()); err != nil {
		t.Fatalf("Start with the real claude: %v", err)
	}
	cfgPath, _ := cc.Info().Details["mcp_config_file"].(string)
	if st, err := os.Stat(cfgPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file %q: %v, %v; want mode 0600", cfgPath, st, err)
	}

	var initData json.RawMessage
	res, err := cc.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: json.RawMessage(`{"message": "hi"}`),
		Observe: func(ev node.CallEvent) {
			if ev.Kind == node.EventStep && ev.Step == "init" {
				initData = ev.Data
			}
		}})
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	var init struct {
		SessionID  string      `json:"session_id"`
		MCPServers []MCPServer `json:"mcp_servers"`
	}
	if err := json.Unmarshal(initData, &init); err != nil {
		t.Fatalf("no init step from the real claude (%v): %s", err, initData)
	}
	servers := map[string]MCPServer{}
	for _, s := range init.MCPServers {
		servers[s.Name] = s
	}
	if s := servers["fx"]; s.Status != "connected" || !slices.Contains(s.Tools, "echo") {
		t.Errorf("claude reports server fx as %+v, want connected with tool echo (all: %s)", s, initData)
	}
	if s := servers[SessionServerName]; s.Status != "connected" || !slices.Contains(s.Tools, "sh__bash") {
		t.Errorf("claude reports the session endpoint as %+v, want connected with tool sh__bash (all: %s)", s, initData)
	}
	mu.Lock()
	var st persisted
	json.Unmarshal(saved, &st)
	mu.Unlock()
	if init.SessionID != st.SessionID {
		t.Errorf("claude's session id %q, want the node's %q", init.SessionID, st.SessionID)
	}
	if !res.IsError || !strings.Contains(resultText(res), "not logged in") {
		t.Errorf("result = %v %q, want an error result saying not logged in", res.IsError, resultText(res))
	}
	if info := cc.Info(); info.State != node.Error || !strings.Contains(info.Error, "not logged in") {
		t.Errorf("node = %v %q, want ERROR: not logged in", info.State, info.Error)
	}
	if err := cc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfgPath); !os.IsNotExist(err) {
		t.Errorf("config %s still there after Stop", cfgPath)
	}

	// A restart resumes the conversation: the real claude accepts --resume.
	if err := cc.Start(context.Background()); err != nil {
		t.Fatalf("restart (--resume %s): %v", st.SessionID, err)
	}
	cc.Stop(context.Background())

	// And a fork of it starts under its own id.
	fspec := spec
	fspec.ID = "fork"
	fspec.Options, _ = json.Marshal(Options{ForkFromSession: st.SessionID})
	fn, err := New(fspec, node.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fork := fn.(*Node)
	t.Cleanup(func() { fork.Stop(context.Background()) })
	if err := fork.Start(context.Background()); err != nil {
		t.Fatalf("fork (--resume --fork-session --session-id): %v", err)
	}
	var forkInit json.RawMessage
	fork.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: json.RawMessage(`{"message": "hi"}`),
		Observe: func(ev node.CallEvent) {
			if ev.Step == "init" {
				forkInit = ev.Data
			}
		}})
	forkID, _ := fork.Info().Details["session_id"].(string)
	if forkID == st.SessionID || !strings.Contains(string(forkInit), forkID) {
		t.Errorf("fork runs as %s (init %s), want its own id, not %s", forkID, forkInit, st.SessionID)
	}
}
