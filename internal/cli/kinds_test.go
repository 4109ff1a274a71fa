package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
)

// step is one command line run through the real command tree and what a
// person would check of it.
type step struct {
	argv   []string
	code   int
	stdout string // substring of stdout
	stderr string // substring of stderr
	not    string // must not be in stdout
}

func runSteps(t *testing.T, env *Env, out, errb *bytes.Buffer, steps []step) {
	t.Helper()
	for _, st := range steps {
		out.Reset()
		errb.Reset()
		code := ExitCode(errb, Exec(context.Background(), env, st.argv))
		name := strings.Join(st.argv, " ")
		if code != st.code {
			t.Errorf("nerve %s: exit %d; want %d\nstdout: %s\nstderr: %s", name, code, st.code, out, errb)
		}
		if !strings.Contains(out.String(), st.stdout) {
			t.Errorf("nerve %s: stdout %q; want it to contain %q", name, out, st.stdout)
		}
		if !strings.Contains(errb.String(), st.stderr) {
			t.Errorf("nerve %s: stderr %q; want it to contain %q", name, errb, st.stderr)
		}
		if st.not != "" && strings.Contains(out.String(), st.not) {
			t.Errorf("nerve %s: stdout %q; want no %q", name, out, st.not)
		}
	}
}

// nodeDetail runs `node info ID --json`.
func nodeDetail(t *testing.T, env *Env, out *bytes.Buffer, id string) api.NodeDetail {
	t.Helper()
	out.Reset()
	if err := Exec(context.Background(), env, []string{"node", "info", id, "--json"}); err != nil {
		t.Fatalf("node info %s: %v", id, err)
	}
	var d api.NodeDetail
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("node info %s --json: %v\n%s", id, err, out)
	}
	return d
}

func options(t *testing.T, d api.NodeDetail) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(d.Spec.Options, &m); err != nil {
		t.Fatalf("options of %s: %v (%s)", d.Spec.ID, err, d.Spec.Options)
	}
	return m
}

// headerServer is an MCP server over streamable HTTP and SSE that records
// the headers of the requests it gets.
type headerServer struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerServer) saw(key, value string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.seen, func(hd http.Header) bool { return hd.Get(key) == value })
}

func newHeaderServer(t *testing.T) (*headerServer, *httptest.Server) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	get := func(*http.Request) *mcp.Server { return srv }
	h := &headerServer{}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/sse", mcp.NewSSEHandler(get, nil))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Header.Clone())
		h.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	// A node may still hold a stream open: cut it rather than wait for it.
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return h, hs
}

func TestNodeAddMCP(t *testing.T) {
	bin := testutil.BuildBinary(t, "./fixtures/mcpserver")
	hs, srv := newHeaderServer(t)
	t.Setenv("NERVE_TEST_TOKEN", "s3cret")
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "mcp", "fx", "--transport", "stdio", "--timeout", "45s", "--env", "FIXTURE_X=1", "--cwd", ".", "--", bin}, stdout: "mcp fx is READY"},
		{argv: []string{"call", "@fx", "echo", "text=hi"}, stdout: "hi"},
		{argv: []string{"node", "add", "mcp", "web", "--url", srv.URL + "/mcp", "--header", "Authorization: Bearer ${NERVE_TEST_TOKEN}", "--timeout", "1m"}, stdout: "mcp web is READY with 1 tool"},
		{argv: []string{"call", "@web", "ping"}, stdout: "pong"},
		{argv: []string{"node", "add", "mcp", "old", "--url", srv.URL + "/sse", "--transport", "sse", "--header", "X-Via: sse"}, stdout: "mcp old is READY"},
		{argv: []string{"node", "add", "mcp", "bad", "--transport", "http", "--", bin}, code: ExitUsage, stderr: "--transport http needs --url"},
		{argv: []string{"node", "add", "mcp", "bad", "--transport", "stdio", "--url", srv.URL}, code: ExitUsage, stderr: "--transport stdio runs a command"},
		{argv: []string{"node", "add", "mcp", "bad", "--transport", "ws", "--", bin}, code: ExitUsage, stderr: `--transport "ws": use stdio, http or sse`},
		{argv: []string{"node", "add", "mcp", "bad", "--url", srv.URL, "--", bin}, code: ExitUsage, stderr: "not both"},
		{argv: []string{"node", "add", "mcp", "bad"}, code: ExitUsage, stderr: "an mcp node needs a server"},
		{argv: []string{"node", "add", "mcp", "bad", "--header", "A: b", "--", bin}, code: ExitUsage, stderr: "--header is sent to a --url server"},
		{argv: []string{"node", "add", "mcp", "bad", "--timeout", "soon", "--", bin}, code: ExitUsage, stderr: "--timeout \"soon\""},
	})
	if !hs.saw("Authorization", "Bearer s3cret") {
		t.Errorf("the http server never got the expanded Authorization header")
	}
	if !hs.saw("X-Via", "sse") {
		t.Errorf("the sse server never got X-Via")
	}

	// The saved specs are what mcpconf.Server.Spec makes, ${VAR} kept.
	wd, _ := os.Getwd()
	tests := []struct {
		id   string
		want mcpconf.Server
	}{
		{"fx", mcpconf.Server{Name: "fx", Transport: "stdio", Command: []string{bin}, Cwd: wd, Env: map[string]string{"FIXTURE_X": "1"}, Timeout: 45e9}},
		{"web", mcpconf.Server{Name: "web", Transport: "http", URL: srv.URL + "/mcp", Cwd: wd, Headers: map[string]string{"Authorization": "Bearer ${NERVE_TEST_TOKEN}"}, Timeout: 60e9}},
		{"old", mcpconf.Server{Name: "old", Transport: "sse", URL: srv.URL + "/sse", Cwd: wd, Headers: map[string]string{"X-Via": "sse"}}},
	}
	for _, tt := range tests {
		d := nodeDetail(t, env, out, tt.id)
		got, _, err := mcpconf.ServerFromSpec(d.Spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(tt.want)
		if string(gj) != string(wj) {
			t.Errorf("saved server %s:\n got %s\nwant %s", tt.id, gj, wj)
		}
	}
}

func TestNodeAddLLM(t *testing.T) {
	s := llmserver.Start(
		llmserver.Turn{Text: "first answer"},
		llmserver.Turn{Text: "second answer"},
		llmserver.Turn{Text: "after reset"},
	)
	t.Cleanup(s.Close)
	t.Setenv("NERVE_TEST_KEY", "k-123")
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}, stdout: "READY"},
		{argv: []string{"node", "add", "llm", "ag", "--base-url", s.URL, "--model", "m1", "--api-key", "${NERVE_TEST_KEY}",
			"--tools", "echo, bash.*", "--system", "be brief", "--max-steps", "3", "--header", "X-Title: nerve",
			"--temperature", "0.5", "--max-tokens", "64", "--stream=false", "--timeout", "20s", "--context-tokens", "5000", "--provider", "openai"}, stdout: "llm ag is READY with 1 tool"},
		{argv: []string{"call", "@ag", "hello"}, stdout: "first answer"},
		{argv: []string{"call", "@ag", "again"}, stdout: "second answer"},
		{argv: []string{"node", "reset", "ag"}, stdout: "ag forgot its conversation"},
		{argv: []string{"call", "@ag", "anew"}, stdout: "after reset"},
		{argv: []string{"node", "add", "llm", "lit", "--base-url", s.URL, "--model", "m1", "--api-key", "sk-literal"}, code: ExitUsage, stderr: "--api-key is a literal key"},
		{argv: []string{"node", "add", "llm", "lit", "--base-url", s.URL, "--model", "m1", "--api-key", "sk-literal", "--allow-literal-key"}, stdout: "READY", stderr: "warning: --api-key is a literal key"},
		{argv: []string{"node", "add", "llm", "x", "--model", "m1"}, code: ExitUsage, stderr: "needs --base-url URL and --model M"},
		{argv: []string{"node", "add", "llm", "x", "--base-url", s.URL, "--model", "m", "--max-steps", "many"}, code: ExitUsage, stderr: "--max-steps \"many\""},
		{argv: []string{"node", "add", "llm", "x", "--base-url", s.URL, "--model", "m", "--stream=maybe"}, code: ExitUsage, stderr: "=true or =false"},
		{argv: []string{"node", "add", "llm", "x", "--base-url", s.URL, "--model", "m", "--", "cmd"}, code: ExitUsage, stderr: "runs no command"},
		{argv: []string{"node", "add", "llm", "x", "--base-url", s.URL, "--model", "m", "--provider", "gemini"}, code: ExitUsage, stderr: `--provider "gemini" is not supported`},
		// Anthropic's API has one home: --base-url may be left out.
		{argv: []string{"node", "add", "llm", "an", "--provider", "anthropic", "--model", "m", "--api-key", "${NERVE_TEST_KEY}"}, stdout: "READY"},
		{argv: []string{"node", "add", "llm", "lit2", "--provider", "anthropic", "--model", "m", "--api-key", "sk-x"}, code: ExitUsage, stderr: "--api-key '${ANTHROPIC_API_KEY}'"},
		{argv: []string{"node", "add", "llm", "disc", "--base-url", s.URL, "--model", "m", "--tools", "*", "--discover"}, stdout: "READY"},
		{argv: []string{"node", "add", "llm", "x", "--base-url", s.URL, "--model", "m", "--discover"}, code: ExitUsage, stderr: "add --tools '*'"},
	})
	if o := options(t, nodeDetail(t, env, out, "disc")); o["discover"] != true {
		t.Errorf("--discover saved as %v", o["discover"])
	}
	if o := options(t, nodeDetail(t, env, out, "an")); o["base_url"] != "https://api.anthropic.com" {
		t.Errorf("anthropic node's base_url = %v; want the API's home", o["base_url"])
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests; want 3", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m1" || r.Stream || r.Temperature == nil || *r.Temperature != 0.5 || r.MaxTokens != 64 {
		t.Errorf("request: model %q stream %v temperature %v max_tokens %d; want m1 false 0.5 64", r.Model, r.Stream, r.Temperature, r.MaxTokens)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer k-123" {
		t.Errorf("Authorization %q; want the expanded key", got)
	}
	if got := r.Header.Get("X-Title"); got != "nerve" {
		t.Errorf("X-Title %q; want nerve", got)
	}
	if len(r.Messages) == 0 || r.Messages[0].Role != "system" {
		t.Errorf("first message %+v; want the system prompt", r.Messages)
	}
	if !slices.Contains(r.ToolNames(), "echo__identity") {
		t.Errorf("tools offered %v; want echo__identity (--tools echo)", r.ToolNames())
	}
	if n1, n3 := len(reqs[1].Messages), len(reqs[2].Messages); n3 >= n1 {
		t.Errorf("after node reset the model got %d messages, before it %d: the conversation was not forgotten", n3, n1)
	}
	o := options(t, nodeDetail(t, env, out, "ag"))
	want := map[string]any{"base_url": s.URL, "model": "m1", "api_key": "${NERVE_TEST_KEY}", "tools": []any{"echo", "bash.*"},
		"system": "be brief", "max_steps": 3.0, "headers": map[string]any{"X-Title": "nerve"}, "temperature": 0.5,
		"max_tokens": 64.0, "stream": false, "timeout": "20s", "provider": "openai", "context_tokens": 5000.0}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(o)
	if string(wj) != string(gj) {
		t.Errorf("saved options\n got %s\nwant %s", gj, wj)
	}
}

func TestNodeAddClaude(t *testing.T) {
	bin := testutil.BuildBinary(t, "./fixtures/fakeclaude")
	dir := t.TempDir()
	home, record := filepath.Join(dir, "home"), filepath.Join(dir, "record")
	os.MkdirAll(record, 0o700)
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {"fs": {"command": "true"}}}`), 0o600)
	fake := []string{"--env", "FAKECLAUDE_HOME=" + home, "--env", "FAKECLAUDE_RECORD=" + record}
	add := func(id string, flags ...string) []string {
		return append(append(append([]string{"node", "add", "claude", id}, fake...), flags...), "--", bin)
	}
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}, stdout: "READY"},
		{argv: add("cc", "--permission-mode", "plan", "--timeout", "2m", "--mcp-config", cfg, "--strict-mcp-config"), stdout: "claude cc is READY"},
		{argv: add("early", "--fork-from", "cc"), code: ExitUsage, stderr: "--fork-from cc: that node has no conversation yet"},
		{argv: []string{"call", "@cc", "remember the tomato"}, stdout: "You said: remember the tomato"},
		{argv: add("cc2", "--fork-from", "cc"), stdout: "claude cc2 is READY"},
		{argv: []string{"call", "@cc2", "history"}, stdout: "remember the tomato"},
		{argv: add("bad", "--fork-from", "echo"), code: ExitUsage, stderr: "--fork-from echo: echo is an identity node, not a claude node"},
		{argv: add("bad", "--fork-from", "nosuch"), code: ExitUsage, stderr: "--fork-from nosuch"},
		{argv: add("bad", "--permission-mode", "yolo"), code: ExitUsage, stderr: "--permission-mode \"yolo\""},
		{argv: add("bad", "--mcp-config", filepath.Join(dir, "missing.json")), code: ExitUsage, stderr: "missing.json"},
		{argv: []string{"node", "reset", "echo"}, code: ExitUsage, stderr: "@echo has no conversation to reset"},
	})
	o := options(t, nodeDetail(t, env, out, "cc"))
	if o["permission_mode"] != "plan" || o["timeout"] != "2m0s" || o["mcp_config"] != cfg || o["strict_mcp_config"] != true {
		t.Errorf("saved options of cc: %v", o)
	}
	// The argv fakeclaude recorded says the flags reached Claude.
	recs, _ := filepath.Glob(filepath.Join(record, "*.json"))
	var argvs []string
	for _, f := range recs {
		var rec struct{ Argv []string }
		b, _ := os.ReadFile(f)
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		argvs = append(argvs, strings.Join(rec.Argv, " "))
	}
	all := strings.Join(argvs, "\n")
	for _, want := range []string{"--permission-mode plan", "--strict-mcp-config", "--fork-session"} {
		if !strings.Contains(all, want) {
			t.Errorf("no Claude process was started with %s; recorded:\n%s", want, all)
		}
	}
}

func TestKindFlags(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "mcp", "x", "--model", "m", "--", "srv"}, code: ExitUsage, stderr: "--model is a flag of llm nodes, not of mcp nodes (see `nerve node add mcp --help`)"},
		{argv: []string{"node", "add", "llm", "x", "--url", "http://h"}, code: ExitUsage, stderr: "--url is a flag of mcp nodes, not of llm nodes"},
		{argv: []string{"node", "add", "bash", "x", "--header", "A: b"}, code: ExitUsage, stderr: "--header is a flag of llm or mcp nodes, not of bash nodes"},
		{argv: []string{"node", "add", "identity", "x", "--cwd", "/"}, code: ExitUsage, stderr: "--cwd is a flag of bash, claude or mcp nodes"},
		{argv: []string{"node", "add", "llm", "x", "--session-tools"}, code: ExitUsage, stderr: "--session-tools is a flag of claude nodes"},
		{argv: []string{"node", "add", "llm", "--help"}, stdout: "--base-url URL", not: "--transport"},
		{argv: []string{"node", "add", "mcp", "--help"}, stdout: "--transport stdio|http|sse", not: "--model"},
		{argv: []string{"node", "add", "claude", "x", "--help"}, stdout: "--fork-from NODE", not: "--base-url"},
		{argv: []string{"node", "add", "bash", "--help"}, stdout: "--timeout DURATION", not: "--url"},
		{argv: []string{"help", "node", "add"}, stdout: "nerve node add KIND --help"},
		{argv: []string{"node", "add", "bash", "sh", "--timeout", "5m"}, stdout: "bash sh is READY"},
	})
	if o := options(t, nodeDetail(t, env, out, "sh")); o["timeout"] != "5m0s" {
		t.Errorf("bash --timeout saved as %v", o)
	}

	// Completion offers each kind's flags, in the shell and in the REPL.
	c, err := env.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	env.Client = c
	kinds, err := c.Kinds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	specs := commandSpecs(Tree(), kinds)
	tests := []struct {
		words []string
		cur   string
		want  string
	}{
		{[]string{"node", "add", "llm"}, "--ma", "--max-steps --max-tokens"},
		{[]string{"node", "add", "llm", "ag"}, "--ur", ""},
		{[]string{"node", "add", "mcp", "fs"}, "--t", "--timeout --transport"},
		{[]string{"node", "add", "mcp", "fs", "--transport"}, "", "http sse stdio"},
		{[]string{"node", "add", "claude", "cc", "--permission-mode"}, "a", "acceptEdits auto"},
		{[]string{"node", "add", "claude"}, "--f", "--fork-from"},
		{[]string{"mcp"}, "im", "import"},
		{[]string{"node"}, "re", "reset restart"},
		{nil, "pro", "prompt prompts"},
	}
	for _, tt := range tests {
		got := strings.Join(Candidates(context.Background(), env, tt.words, tt.cur), " ")
		if got != tt.want {
			t.Errorf("shell: complete %v %q = %q; want %q", tt.words, tt.cur, got, tt.want)
		}
		line := ":" + strings.Join(append(slices.Clone(tt.words), tt.cur), " ")
		cands, _ := commander.Complete(line, len([]rune(line)), commander.NewIndex(nil), specs)
		for i := range cands {
			cands[i] = strings.TrimPrefix(strings.TrimSpace(cands[i]), ":")
		}
		if g := strings.Join(cands, " "); g != tt.want {
			t.Errorf("REPL: complete %q = %q; want %q", line, g, tt.want)
		}
	}
}
