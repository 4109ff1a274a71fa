package mcpnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// helperEnv makes the test binary act as a small stdio MCP server (see
// TestMain), so process handling is tested without other fixtures.
const helperEnv = "NERVE_MCPNODE_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperCommand returns the argv that runs the test binary as a helper
// server in mode.
func helperCommand(t testing.TB, mode string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/usr/bin/env", helperEnv + "=" + mode, exe}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type slowIn struct {
	Steps int `json:"steps"`
	// Ms is the pause between steps.
	Ms int `json:"ms"`
}

// newTestServer is the Go SDK server the tests talk to, in memory or over
// stdio: echo, slow (with progress), crash, spawn (a grandchild), log,
// add_tool (list_changed), resources and a prompt.
func newTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1.2.3"}, &mcp.ServerOptions{Instructions: "be nice"})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "progress then done"}, func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
		for i := range in.Steps {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: float64(in.Steps), Message: "step " + strconv.Itoa(i+1)})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "the server exits"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "about to crash: out of cheese")
		os.Exit(5)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "logs then answers"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "t", Data: in.Text})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "adds a tool named text"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: in.Text}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "asks the client to sample"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}}})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed: " + err.Error()}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "lists the client's roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		b, _ := json.Marshal(res.Roots)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "starts a grandchild that sleeps"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://a", Name: "a", MIMEType: "text/plain"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "alpha"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	return s
}

func runHelper(mode string) {
	switch mode {
	case "server":
		newTestServer().Run(context.Background(), &mcp.StdioTransport{})
	case "crash-start":
		fmt.Fprintln(os.Stderr, "fatal: config file missing")
		os.Exit(3)
	case "garbage":
		fmt.Println("Server listening on port 3000")
		testutil.Hang()
	case "hang":
		fmt.Fprintln(os.Stderr, "warming up")
		testutil.Hang()
	case "daemon":
		runDaemonHelper()
	case "ignore-stdin":
		// A server that never exits by itself: stop must signal it.
		go newTestServer().Run(context.Background(), &mcp.StdioTransport{})
		testutil.Hang()
	}
}

// inMemory returns a config whose node talks to a fresh in-memory test
// server.
func inMemory(t testing.TB) config {
	t.Helper()
	cfg := defaultConfig()
	cfg.transport = func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := newTestServer().Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatalf("connecting the in-memory server: %v", err)
		}
		t.Cleanup(func() { ss.Close() })
		return ct
	}
	return cfg
}

// events records what a node tells its session.
type events struct {
	mu       sync.Mutex
	states   []string
	toolsCh  chan struct{}
	stateCh  chan node.State
	hooks    node.Hooks
	logLines int
}

func newEvents() *events {
	return &events{toolsCh: make(chan struct{}, 16), stateCh: make(chan node.State, 64)}
}

func (e *events) env() node.Env {
	return node.Env{
		OnState: func(from, to node.State, reason string) {
			e.mu.Lock()
			e.states = append(e.states, to.String())
			e.mu.Unlock()
			e.stateCh <- to
		},
		OnToolsChanged: func() { e.toolsCh <- struct{}{} },
		Hooks:          e.hooks,
	}
}

// waitState waits for the node to reach want.
func (e *events) waitState(t testing.TB, want node.State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st := <-e.stateCh:
			if st == want {
				return
			}
		case <-deadline:
			t.Fatalf("timed out waiting for state %s (saw %v)", want, e.seen())
		}
	}
}

func (e *events) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.states...)
}

func stdioSpec(id string, argv []string) node.Spec {
	return node.Spec{ID: id, Kind: Kind, Command: argv, Options: json.RawMessage(`{"transport":"stdio"}`)}
}

func mustStart(t testing.TB, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
}

func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("result has no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// badmcp returns the argv of fixtures/badmcp with flags.
func badmcp(t testing.TB, flags ...string) []string {
	t.Helper()
	return append([]string{testutil.BuildBinary(t, "./fixtures/badmcp")}, flags...)
}

// faultConfig is the config of a node under fault: short waits, so a test
// that escalates to SIGKILL or times out initialize stays fast.
func faultConfig() config {
	cfg := defaultConfig()
	cfg.startTimeout = 10 * time.Second
	cfg.stopGrace = 20 * time.Millisecond
	cfg.termGrace = 200 * time.Millisecond
	return cfg
}

// faultSession is a session whose mcp nodes are built with cfg, except the
// node "good", which gets the defaults.
func faultSession(t *testing.T, cfg config) *session.Session {
	t.Helper()
	reg := &session.Registry{}
	reg.Register(Kind, func(spec node.Spec, env node.Env) (node.Node, error) {
		if spec.ID == "good" {
			return newNode(spec, env, defaultConfig())
		}
		return newNode(spec, env, cfg)
	})
	s := session.New("faults", reg, nil)
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// serverPid is the pid (and process group) of the node's current or last
// server.
func serverPid(n node.Node) int {
	m := n.(*Node)
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pid
}

// childPid reads the pid badmcp --spawn-child printed on its stderr.
func childPid(n node.Node) int {
	for _, l := range n.(*Node).StderrTail() {
		if s, ok := strings.CutPrefix(l, "child pid "); ok {
			pid, _ := strconv.Atoi(s)
			return pid
		}
	}
	return 0
}

func echo(ctx context.Context, s *session.Session, id, text string) (string, error) {
	args, _ := json.Marshal(map[string]string{"text": text})
	res, err := s.Call(ctx, id, &node.CallRequest{Tool: "echo", Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("empty result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("content is %T, want text", res.Content[0])
	}
	return tc.Text, nil
}

func wantAll(t *testing.T, what, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, got)
		}
	}
}

// daemonHelperEnv names badmcp for the "daemon" helper mode.
const daemonHelperEnv = "NERVE_MCPNODE_BADMCP"

// runDaemonHelper acts as a daemon: it starts an mcp node on badmcp
// --spawn-child, prints "pids SERVER CHILD LIFELINE" and waits to be
// killed.
func runDaemonHelper() {
	argv := []string{os.Getenv(daemonHelperEnv), "--mode", "ok", "--spawn-child"}
	n, err := newNode(stdioSpec("victim", argv), node.Env{}, defaultConfig())
	if err == nil {
		err = n.Start(context.Background())
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for childPid(n) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the stderr reader has not got there yet
	}
	n.mu.RLock()
	ll := n.conn.proc.LifelinePid()
	n.mu.RUnlock()
	fmt.Println("pids", serverPid(n), childPid(n), ll)
	testutil.Hang()
}
