package mcpnode

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

func memNode(t *testing.T, opts string, ev *events) *Node {
	t.Helper()
	if opts == "" {
		opts = `{"transport":"http","url":"http://in-memory.invalid/mcp"}`
	}
	n, err := newNode(node.Spec{ID: "mem", Kind: Kind, Options: json.RawMessage(opts)}, ev.env(), inMemory(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDiscoveryAndFeatures(t *testing.T) {
	ev := newEvents()
	n := memNode(t, "", ev)
	mustStart(t, n)
	ctx := context.Background()

	tools, err := n.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"echo", "slow", "log", "add_tool", "sample", "roots"} {
		if !names[want] {
			t.Errorf("tool %q missing from %v", want, names)
		}
	}
	info := n.Info()
	if info.State != node.Ready || info.Tools != len(tools) {
		t.Errorf("Info = %+v", info)
	}
	for k, want := range map[string]any{"server_name": "testserver", "server_version": "1.2.3", "protocol_version": ModernProtocol, "instructions": "be nice", "resources": 1, "prompts": 1} {
		if got := info.Details[k]; got != want {
			t.Errorf("Details[%q] = %v, want %v", k, got, want)
		}
	}
	if n.Instructions() != "be nice" || n.ServerInfo().Name != "testserver" || n.ServerCapabilities().Tools == nil {
		t.Errorf("Instructions/ServerInfo/ServerCapabilities wrong")
	}

	res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if err != nil || text(t, res) != "hi" {
		t.Fatalf("echo: %v %v", res, err)
	}
	if _, err := n.CallTool(ctx, &node.CallRequest{Tool: "nope"}); !errors.Is(err, node.ErrUnknownTool) {
		t.Errorf("unknown tool: err = %v, want ErrUnknownTool", err)
	}

	rr, err := n.ReadResource(ctx, "test://a")
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "alpha" {
		t.Errorf("ReadResource = %+v, %v", rr, err)
	}
	if got := len(n.Resources()); got != 1 {
		t.Errorf("Resources: %d, want 1", got)
	}
	pr, err := n.GetPrompt(ctx, "greet", map[string]string{"who": "bob"})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello bob" {
		t.Errorf("GetPrompt = %+v, %v", pr, err)
	}
	if err := n.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if err := n.SetLoggingLevel(ctx, "debug"); err != nil {
		t.Errorf("SetLoggingLevel: %v", err)
	}
}

func TestProgressExtendsTimeout(t *testing.T) {
	ev := newEvents()
	n := memNode(t, `{"transport":"http","url":"http://x.invalid/","timeout":"1s"}`, ev)
	mustStart(t, n)
	ctx := context.Background()

	var mu sync.Mutex
	var progress []float64
	req := &node.CallRequest{Tool: "slow", Arguments: json.RawMessage(`{"steps":4,"ms":400}`), Observe: func(e node.CallEvent) {
		if e.Kind == node.EventProgress {
			mu.Lock()
			progress = append(progress, e.Progress)
			mu.Unlock()
		}
	}}
	// 1.6 s in all, longer than the timeout, but progress every 400 ms.
	res, err := n.CallTool(ctx, req)
	if err != nil || text(t, res) != "done" {
		t.Fatalf("slow with progress: %v, %v", res, err)
	}
	mu.Lock()
	// Every notification arrives before the result (see tapTransport).
	if len(progress) != 4 || progress[0] != 1 || progress[3] != 4 {
		t.Errorf("progress events = %v, want 1, 2, 3, 4", progress)
	}
	mu.Unlock()

	_, err = n.CallTool(ctx, &node.CallRequest{Tool: "slow", Arguments: json.RawMessage(`{"steps":1,"ms":5000}`)})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("silent call: err = %v, want ErrTimeout with advice", err)
	}
	if st := n.State(); st != node.Ready {
		t.Errorf("after a timed-out call the node is %s, want READY", st)
	}
	if res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"still here"}`)}); err != nil || text(t, res) != "still here" {
		t.Errorf("call after timeout: %v %v", res, err)
	}
}

func TestConcurrentCallsBusyAndInterrupt(t *testing.T) {
	ev := newEvents()
	n := memNode(t, "", ev)
	mustStart(t, n)
	ctx := context.Background()

	started := make(chan struct{}, 3)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := n.CallTool(ctx, &node.CallRequest{Tool: "slow", Arguments: json.RawMessage(`{"steps":100,"ms":50}`), Observe: func(e node.CallEvent) {
				if e.Progress == 1 {
					started <- struct{}{}
				}
			}})
			errs <- err
		}()
	}
	for range 3 {
		<-started
	}
	if st, inflight := n.State(), n.InFlight(); st != node.Busy || inflight != 3 {
		t.Errorf("with 3 calls in flight: state %s, in flight %d; want BUSY, 3", st, inflight)
	}
	n.Interrupt(ctx)
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrInterrupted) {
			t.Errorf("interrupted call: err = %v, want ErrInterrupted", err)
		}
	}
	if st := n.State(); st != node.Ready {
		t.Errorf("after interrupt: %s, want READY", st)
	}

	// ctx cancel ends one call only.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := n.CallTool(cctx, &node.CallRequest{Tool: "slow", Arguments: json.RawMessage(`{"steps":100,"ms":50}`), Observe: func(e node.CallEvent) {
			if e.Progress == 1 {
				cancel()
			}
		}})
		errs <- err
	}()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: err = %v, want context.Canceled", err)
	}
}

func TestListChangedRefreshesTools(t *testing.T) {
	ev := newEvents()
	n := memNode(t, "", ev)
	mustStart(t, n)
	ctx := context.Background()
	if _, err := n.CallTool(ctx, &node.CallRequest{Tool: "add_tool", Arguments: json.RawMessage(`{"text":"fresh"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ev.toolsCh:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnToolsChanged after the server added a tool")
	}
	tools, _ := n.ListTools(ctx)
	found := false
	for _, tl := range tools {
		found = found || tl.Name == "fresh"
	}
	if !found {
		t.Errorf("tool added by the server is not listed")
	}
	if _, err := n.CallTool(ctx, &node.CallRequest{Tool: "fresh"}); err != nil {
		t.Errorf("calling the new tool: %v", err)
	}
}

type fakeHooks struct{ asked chan string }

func (h *fakeHooks) Sample(ctx context.Context, id string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.asked <- id
	return &mcp.CreateMessageResult{Role: "assistant", Model: "person", Content: &mcp.TextContent{Text: "answer from a person"}}, nil
}

func (h *fakeHooks) Elicit(ctx context.Context, id string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}

// legacyMem is memNode's options pinned to MCP 2025-11-25: the in-memory
// server asks for sampling in the middle of a call, which only that era
// allows (a server of 2026-07-28 answers input_required: modern_test.go).
const legacyMem = `{"transport":"http","url":"http://in-memory.invalid/mcp","protocol":"2025-11-25"}`

func TestSamplingGoesThroughHooks(t *testing.T) {
	t.Run("no hooks: declined, no hang", func(t *testing.T) {
		n := memNode(t, legacyMem, newEvents())
		mustStart(t, n)
		res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "sample", Arguments: json.RawMessage(`{"text":"q"}`)})
		if err != nil || !res.IsError || !strings.Contains(text(t, res), "declined") {
			t.Errorf("sampling with no one to ask: %+v, %v; want an IsError result saying declined", res, err)
		}
	})
	t.Run("hooks answer", func(t *testing.T) {
		ev := newEvents()
		h := &fakeHooks{asked: make(chan string, 1)}
		ev.hooks = h
		n := memNode(t, legacyMem, ev)
		mustStart(t, n)
		res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "sample", Arguments: json.RawMessage(`{"text":"q"}`)})
		if err != nil || text(t, res) != "answer from a person" {
			t.Errorf("sampling: %+v, %v", res, err)
		}
		if id := <-h.asked; id != "mem" {
			t.Errorf("hook asked for node %q, want mem", id)
		}
	})
}

func TestLogMessagesReachTheCall(t *testing.T) {
	n := memNode(t, "", newEvents())
	mustStart(t, n)
	ctx := context.Background()
	if err := n.SetLoggingLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []node.CallEvent
	_, err := n.CallTool(ctx, &node.CallRequest{Tool: "log", Arguments: json.RawMessage(`{"text":"careful"}`), Observe: func(e node.CallEvent) {
		mu.Lock()
		logs = append(logs, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 1 || logs[0].Kind != node.EventLog || logs[0].Level != "warning" || logs[0].Text != "careful" {
		t.Errorf("log events = %+v, want one warning 'careful'", logs)
	}
}

// TestStdioLifecycle runs a real child: start, call, no roots offered, stop, and
// nothing of its process group left.
func TestStdioLifecycle(t *testing.T) {
	dir := t.TempDir()
	spec := stdioSpec("kid", helperCommand(t, "server"))
	spec.Cwd = dir
	ev := newEvents()
	n, err := newNode(spec, ev.env(), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	ctx := context.Background()
	pid, _ := n.Info().Details["pid"].(int)
	if pid == 0 {
		t.Fatalf("no pid in Info: %+v", n.Info().Details)
	}
	// No roots configured: the node's cwd is not offered as one.
	res, err := n.CallTool(ctx, &node.CallRequest{Tool: "roots"})
	if err == nil && strings.Contains(text(t, res), "file://") {
		t.Errorf("roots = %s; want none offered when none are configured", text(t, res))
	}
	res, err = n.CallTool(ctx, &node.CallRequest{Tool: "spawn"})
	if err != nil {
		t.Fatal(err)
	}
	grandchild, _ := strconv.Atoi(text(t, res))
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n.State() != node.Stopped {
		t.Errorf("state after stop: %s", n.State())
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessGroupAlive(pid) }, "the server's process group to be gone")
	if testutil.ProcessAlive(grandchild) {
		t.Errorf("grandchild %d outlived the node", grandchild)
	}
	// Restart from STOPPED.
	if err := n.Start(ctx); err != nil {
		t.Fatalf("start after stop: %v", err)
	}
	if res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"again"}`)}); err != nil || text(t, res) != "again" {
		t.Errorf("after restart: %v %v", res, err)
	}
}

func TestStopSignalsAServerThatIgnoresStdin(t *testing.T) {
	cfg := defaultConfig()
	cfg.stopGrace = 20 * time.Millisecond
	n, err := newNode(stdioSpec("stubborn", helperCommand(t, "ignore-stdin")), node.Env{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	pid := n.Info().Details["pid"].(int)
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if testutil.ProcessGroupAlive(pid) {
		t.Errorf("process group %d alive after Stop returned", pid)
	}
}

// TestFaults checks each way a stdio server can fail: the node goes ERROR
// with a message that says what happened, and the group is gone.
func TestFaults(t *testing.T) {
	noExec := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		want []string // substrings of the error and the ERROR reason
	}{
		{"command not found", []string{"no-such-mcp-server-xyz"}, []string{`"no-such-mcp-server-xyz" not found`, "is it installed", "PATH"}},
		{"permission denied", []string{noExec}, []string{"permission denied", "chmod +x"}},
		{"exits during start", helperCommand(t, "crash-start"), []string{"exited with code 3 during start", "fatal: config file missing"}},
		{"garbage on stdout", helperCommand(t, "garbage"), []string{"not JSON-RPC", "Server listening on port 3000"}},
		// sh, not the helper: a -race test binary re-executed on a loaded
		// machine may not have written its first line within 500ms.
		{"no answer to initialize", []string{"sh", "-c", "echo warming up >&2; exec sleep 300"}, []string{"did not answer initialize within the start timeout of 500ms", "warming up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			// Only the hang is about the start timeout; the others fail
			// by themselves, and a short timer raced them on a loaded
			// machine (a -race re-exec can take longer than 500ms).
			cfg.startTimeout = 10 * time.Second
			if tt.name == "no answer to initialize" {
				cfg.startTimeout = 500 * time.Millisecond
			}
			ev := newEvents()
			n, err := newNode(stdioSpec("bad", tt.argv), ev.env(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = n.Start(context.Background())
			if err == nil {
				n.Stop(context.Background())
				t.Fatal("Start succeeded")
			}
			info := n.Info()
			if info.State != node.Error {
				t.Errorf("state %s, want ERROR", info.State)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(info.Error, w) {
					t.Errorf("error %q (reason %q) does not say %q", err, info.Error, w)
				}
			}
			if pid, ok := info.Details["pid"].(int); ok && testutil.ProcessGroupAlive(pid) {
				t.Errorf("process group %d left behind", pid)
			}
			if err := n.Stop(context.Background()); err != nil || n.State() != node.Stopped {
				t.Errorf("Stop out of ERROR: %v, state %s", err, n.State())
			}
		})
	}
}

func TestCrashMidCall(t *testing.T) {
	ev := newEvents()
	n, err := newNode(stdioSpec("crashy", helperCommand(t, "server")), ev.env(), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	_, err = n.CallTool(context.Background(), &node.CallRequest{Tool: "crash"})
	if err == nil || !strings.Contains(err.Error(), "exited with code 5") || !strings.Contains(err.Error(), "out of cheese") {
		t.Fatalf("call during a crash: err = %v, want the exit code and the stderr tail", err)
	}
	ev.waitState(t, node.Error)
	if info := n.Info(); !strings.Contains(info.Error, "exited with code 5") {
		t.Errorf("ERROR reason %q", info.Error)
	}
	if got := n.StderrTail(); len(got) == 0 || got[len(got)-1] != "about to crash: out of cheese" {
		t.Errorf("StderrTail = %q", got)
	}
	// restart = stop → start brings it back.
	if err := n.Restart(context.Background()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if n.State() != node.Ready {
		t.Errorf("after restart: %s", n.State())
	}
}

func TestRestartOnFailure(t *testing.T) {
	cfg := defaultConfig()
	cfg.restartBase = 10 * time.Millisecond
	ev := newEvents()
	spec := stdioSpec("phoenix", helperCommand(t, "server"))
	spec.Options = json.RawMessage(`{"transport":"stdio","restart":"on-failure"}`)
	n, err := newNode(spec, ev.env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	n.CallTool(context.Background(), &node.CallRequest{Tool: "crash"})
	ev.waitState(t, node.Error)
	ev.waitState(t, node.Ready)
	if res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"back"}`)}); err != nil || text(t, res) != "back" {
		t.Errorf("after automatic restart: %v %v", res, err)
	}
	if got := n.Info().Details["restarts"]; got != 1 {
		t.Errorf("restarts = %v, want 1", got)
	}
}

func TestUnsetVariableNamedAtStart(t *testing.T) {
	spec := stdioSpec("v", []string{"${NERVE_TEST_SURELY_UNSET_VAR}"})
	n, err := newNode(spec, node.Env{}, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "NERVE_TEST_SURELY_UNSET_VAR") {
		t.Errorf("err = %v, want it to name the variable", err)
	}
}

func TestCallCapStopsEvenWithProgress(t *testing.T) {
	cfg := inMemory(t)
	cfg.callCap = 400 * time.Millisecond
	n, err := newNode(node.Spec{ID: "capped", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://x.invalid/","timeout":"1s"}`)}, node.Env{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	_, err = n.CallTool(context.Background(), &node.CallRequest{Tool: "slow", Arguments: json.RawMessage(`{"steps":100,"ms":50}`)})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "cap") {
		t.Fatalf("err = %v, want ErrTimeout naming the cap", err)
	}
	if n.State() != node.Ready {
		t.Errorf("state %s after the cap, want READY", n.State())
	}
}

// TestFactoryResolvesTheNodesVariables: the kind the daemon registers
// (Factory, not New) resolves ${VAR} against the node's variables (the
// client's environment and nerve's env file), not the daemon's.
func TestFactoryResolvesTheNodesVariables(t *testing.T) {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "from-the-client" {
			http.Error(w, "wrong key", http.StatusForbidden)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	opts := json.RawMessage(`{"transport":"http","url":"` + srv.URL + `","headers":{"X-Key":"${NERVE_TEST_NODE_KEY}"}}`)
	n, err := Factory(&Options{})(node.Spec{ID: "vars", Kind: Kind, Options: opts}, node.Env{Vars: mapVars{"NERVE_TEST_NODE_KEY": "from-the-client"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	n.Stop(context.Background())
}

// mapVars is node.Vars over a map.
type mapVars map[string]string

func (m mapVars) Lookup(k string) (string, bool) { v, ok := m[k]; return v, ok }
func (m mapVars) Environ() []string              { return nil }
func (m mapVars) Where() string                  { return "the test's variables" }

// TestFactoryResolvesEnvVars: the kind's factory (the one the daemon
// registers) resolves ${VAR} against the node's variables — the
// environment of the client that added it — and not only the daemon's.
func TestFactoryResolvesEnvVars(t *testing.T) {
	argv := helperCommand(t, "server")
	exe := argv[len(argv)-1]
	argv[len(argv)-1] = "${NERVE_TEST_SERVER}"
	if _, ok := os.LookupEnv("NERVE_TEST_SERVER"); ok {
		t.Skip("NERVE_TEST_SERVER is set in the test's own environment")
	}
	env := newEvents().env()
	env.Vars = &node.EnvLayers{Layers: [][]string{{"NERVE_TEST_SERVER=" + exe}}, Names: []string{"the client's environment"}}
	n, err := Factory(&Options{})(stdioSpec("vars", argv), env)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n.(*Node))
	res, err := n.CallTool(t.Context(), &node.CallRequest{Tool: "echo", Arguments: []byte(`{"text":"from the client's env"}`)})
	if err != nil || text(t, res) != "from the client's env" {
		t.Fatalf("call: %v %v", err, res)
	}
}
