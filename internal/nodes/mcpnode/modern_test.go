package mcpnode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/gosdkfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// answering are hooks that accept every elicitation with content and
// answer every sampling request with text; asked records what was asked.
type answering struct {
	content map[string]any
	text    string

	mu    sync.Mutex
	asked []string
}

func (h *answering) Sample(_ context.Context, id string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.mu.Lock()
	h.asked = append(h.asked, "sample")
	h.mu.Unlock()
	return &mcp.CreateMessageResult{Role: "assistant", Model: "person", Content: &mcp.TextContent{Text: h.text}}, nil
}

func (h *answering) Elicit(_ context.Context, id string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.mu.Lock()
	h.asked = append(h.asked, "elicit: "+p.Message)
	h.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: h.content}, nil
}

func (h *answering) questions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.asked)
}

// freeAddr returns a free loopback address.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveHTTP runs argv, a server that listens on addr, until the test
// ends, and returns once it accepts connections.
func serveHTTP(t testing.TB, addr string, argv []string, env ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %v", argv[0], addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveFixture runs fixtures/mcpserver with args over HTTP on a port of its
// own choosing until the test ends, and returns its URL (the fixture says
// it on stderr once it listens: no port is picked here that another test
// could take meanwhile).
func serveFixture(t testing.TB, args ...string) string {
	t.Helper()
	bin := testutil.BuildBinary(t, "./fixtures/mcpserver")
	cmd := exec.Command(bin, append(args, "--http", "127.0.0.1:0")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go io.Copy(io.Discard, stderr)
			return url
		}
	}
	t.Fatalf("fixtures/mcpserver %v did not say where it listens: %v", args, sc.Err())
	return ""
}

// modernServerNodes returns, for each transport, a node of the Go SDK's
// conformance everything-server limited to MCP 2026-07-28 (stdio, and
// stateless streamable HTTP).
func modernServerNodes(t *testing.T, ev *events) map[string]*Node {
	bin := gosdkfix.EverythingServer(t, ModernProtocol)
	addr := freeAddr(t)
	serveHTTP(t, addr, []string{bin, "-http", addr})
	out := map[string]*Node{}
	for name, spec := range map[string]node.Spec{
		"stdio": stdioSpec("modern", []string{bin}),
		"http":  {ID: "modern", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://` + addr + `"}`)},
	} {
		n, err := newNode(spec, ev.env(), defaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// TestModernServerIsAFullNode: the Go SDK's everything-server, limited to
// MCP 2026-07-28, over stdio and stateless HTTP, is a node like any
// other: its tools, resources and templates, prompts, completion, the log
// level per request, change notifications through subscriptions/listen,
// resource subscriptions, and the liveness check without ping.
func TestModernServerIsAFullNode(t *testing.T) {
	ev := newEvents()
	for transport, n := range modernServerNodes(t, ev) {
		t.Run(transport, func(t *testing.T) {
			ctx := t.Context()
			mustStart(t, n)
			info := n.Info()
			if got := info.Details["protocol_version"]; got != ModernProtocol {
				t.Errorf("protocol_version = %v, want %s", got, ModernProtocol)
			}
			if got := info.Details["protocol"]; got != ProtocolAuto {
				t.Errorf("protocol = %v, want auto", got)
			}
			if got := text(t, callOK(t, n, "test_simple_text", `{}`, nil)); !strings.Contains(got, "simple text") {
				t.Errorf("test_simple_text = %q", got)
			}

			if !slices.ContainsFunc(n.Resources(), func(r *mcp.Resource) bool { return r.URI == "test://static-text" }) {
				t.Errorf("resources %v lack test://static-text", n.Resources())
			}
			if len(n.ResourceTemplates()) == 0 {
				t.Error("no resource templates")
			}
			rr, err := n.ReadResource(ctx, "test://static-text")
			if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text == "" {
				t.Errorf("reading test://static-text: %+v, %v", rr, err)
			}
			pr, err := n.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b"})
			if err != nil || len(pr.Messages) == 0 {
				t.Errorf("prompt: %+v, %v", pr, err)
			}
			if _, err := n.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
				Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "x"}}); err != nil {
				t.Errorf("completion: %v", err)
			}
			if err := n.Ping(ctx); err != nil {
				t.Errorf("liveness (server/discover): %v", err)
			}

			// The log level goes with each request: none set, none sent.
			logs := func() int {
				var mu sync.Mutex
				count := 0
				callOK(t, n, "test_logging_tool", `{}`, func(e node.CallEvent) {
					if e.Kind == node.EventLog {
						mu.Lock()
						count++
						mu.Unlock()
					}
				})
				mu.Lock()
				defer mu.Unlock()
				return count
			}
			if c := logs(); c != 0 {
				t.Errorf("%d log messages before a level was set, want none", c)
			}
			if err := n.SetLoggingLevel(ctx, "debug"); err != nil {
				t.Fatal(err)
			}
			if c := logs(); c != 1 {
				t.Errorf("%d log messages at level debug, want 1", c)
			}

			// tools/list_changed through subscriptions/listen.
			drain(ev.toolsCh)
			callOK(t, n, "test_trigger_tool_change", `{}`, nil)
			select {
			case <-ev.toolsCh:
			case <-time.After(10 * time.Second):
				t.Fatal("no tools event after test_trigger_tool_change")
			}
			tools, _ := n.ListTools(ctx)
			if !slices.ContainsFunc(tools, func(tl *mcp.Tool) bool { return tl.Name == "__transient_tool_for_list_changed" }) {
				t.Error("the tool the server added is not listed")
			}

			// A resource subscription: the server updates the watched
			// resource every 3 s.
			updated := make(chan string, 4)
			n.OnResourceUpdated(func(uri string) {
				select {
				case updated <- uri:
				default:
				}
			})
			if err := n.Subscribe(ctx, "test://watched-resource"); err != nil {
				t.Fatal(err)
			}
			select {
			case uri := <-updated:
				if uri != "test://watched-resource" {
					t.Errorf("updated %q", uri)
				}
			case <-time.After(10 * time.Second):
				t.Error("no resources/updated within 10 s (the server sends one every 3 s)")
			}
			if err := n.Unsubscribe(ctx, "test://watched-resource"); err != nil {
				t.Error(err)
			}
		})
	}
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestModernInputRequired: a server of 2026-07-28 answers input_required
// (MRTR); the node asks its hooks — the Commander, a graph gate, an llm
// node — as the elicitation or sampling it means and retries with the
// answers and the request state, until the server completes.
func TestModernInputRequired(t *testing.T) {
	ev := newEvents()
	h := &answering{content: map[string]any{"name": "Ada", "ok": true, "color": "blue"}, text: "Paris"}
	ev.hooks = h
	n := modernServerNodes(t, ev)["stdio"]
	mustStart(t, n)
	for tool, want := range map[string]string{
		"test_input_required_result_elicitation":     "Hello, Ada!",
		"test_input_required_result_sampling":        "Paris",
		"test_input_required_result_request_state":   "state-ok",
		"test_input_required_result_multi_round":     "Ada likes blue",
		"test_input_required_result_multiple_inputs": "Ada",
	} {
		res := callOK(t, n, tool, `{}`, nil)
		got := text(t, res)
		if res.IsError || (want != "" && !strings.Contains(got, want)) {
			t.Errorf("%s = %q (error %v), want it to say %q", tool, got, res.IsError, want)
		}
	}
	if len(h.questions()) < 7 {
		t.Errorf("the hooks were asked %q, want a question per round", h.questions())
	}
}

// recorder is an in-memory server that records the methods it is sent.
type recorder struct {
	mu      sync.Mutex
	methods []string
	// refuse, when set, is the version whose initialize the server
	// refuses, as a server upgraded to 2026-07-28 only would.
	refuse bool
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.methods)
}

func (r *recorder) refusing(on bool) {
	r.mu.Lock()
	r.refuse = on
	r.mu.Unlock()
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.methods = nil
	r.mu.Unlock()
}

func (r *recorder) config(t *testing.T, versions ...string) config {
	cfg := defaultConfig()
	cfg.transport = func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		s := mcp.NewServer(&mcp.Implementation{Name: "recorder", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				r.mu.Lock()
				refuse := r.refuse
				r.mu.Unlock()
				if method == "initialize" && refuse {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: `"initialize" is not supported in the new protocol`}
				}
				return next(ctx, method, req)
			}
		})
		ss, err := s.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatalf("connecting the in-memory server: %v", err)
		}
		t.Cleanup(func() { ss.Close() })
		return &recordingTransport{Transport: ct, r: r}
	}
	return cfg
}

// recordingTransport records the methods the client sends, before the
// server may refuse them.
type recordingTransport struct {
	mcp.Transport
	r *recorder
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return &recordingConn{Connection: c, r: t.r}, err
}

type recordingConn struct {
	mcp.Connection
	r *recorder
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.r.mu.Lock()
		c.r.methods = append(c.r.methods, req.Method)
		c.r.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// TestProtocolNegotiation: with protocol auto a node asks server/discover
// first and falls back to initialize; the version its server spoke is kept
// in the catalogue, so the next start asks it at once, without discover,
// unless the server refuses it (it was upgraded): then it negotiates
// again. A pinned version is asked as it is.
func TestProtocolNegotiation(t *testing.T) {
	rec := &recorder{}
	ev := newEvents()
	env := ev.env()
	env.Dir = t.TempDir()
	spec := node.Spec{ID: "neg", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp"}`)}
	n, err := newNode(spec, env, rec.config(t, LegacyProtocol))
	if err != nil {
		t.Fatal(err)
	}
	start := func() {
		t.Helper()
		rec.reset()
		if err := n.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := n.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	start()
	if got := rec.seen(); len(got) < 2 || got[0] != "server/discover" || got[1] != "initialize" {
		t.Errorf("first start sent %v, want server/discover then initialize", got)
	}
	if v := n.NegotiatedProtocolVersion(); v != LegacyProtocol {
		t.Errorf("negotiated %q, want %s", v, LegacyProtocol)
	}
	b, err := os.ReadFile(n.catalogPath())
	if err != nil || !strings.Contains(string(b), `"protocolVersion":"`+LegacyProtocol+`"`) {
		t.Errorf("the catalogue does not keep the version: %s, %v", b, err)
	}

	// A new node of the same folder (a daemon restart) asks at once.
	n, err = newNode(spec, env, rec.config(t, LegacyProtocol))
	if err != nil {
		t.Fatal(err)
	}
	start()
	if got := rec.seen(); len(got) == 0 || got[0] != "initialize" || slices.Contains(got, "server/discover") {
		t.Errorf("a restart sent %v, want initialize first and no server/discover", got)
	}

	// `nerve node sync` of a stopped node negotiates afresh, though the
	// catalogue remembers 2025-11-25.
	n, err = newNode(spec, env, rec.config(t, LegacyProtocol))
	if err != nil {
		t.Fatal(err)
	}
	rec.reset()
	if err := n.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) == 0 || got[0] != "server/discover" {
		t.Errorf("sync sent %v, want server/discover first", got)
	}

	// The server was upgraded to 2026-07-28 only and refuses initialize.
	rec.refusing(true)
	n, err = newNode(spec, env, rec.config(t, ModernProtocol))
	if err != nil {
		t.Fatal(err)
	}
	start()
	if v := n.NegotiatedProtocolVersion(); v != ModernProtocol {
		t.Errorf("after the upgrade negotiated %q (sent %v), want %s", v, rec.seen(), ModernProtocol)
	}

	// Pinned: 2025-11-25 is asked even of a server that speaks both.
	rec.refusing(false)
	pinned := spec
	pinned.Options = json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp","protocol":"2025-11-25"}`)
	n, err = newNode(pinned, ev.env(), rec.config(t))
	if err != nil {
		t.Fatal(err)
	}
	start()
	if got := rec.seen(); len(got) == 0 || got[0] != "initialize" || n.NegotiatedProtocolVersion() != LegacyProtocol {
		t.Errorf("pinned to 2025-11-25: sent %v, negotiated %s", got, n.NegotiatedProtocolVersion())
	}
	// Pinned to 2026-07-28, a server of 2025-11-25 only is refused with a
	// message that says what to do.
	pinned.Options = json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp","protocol":"2026-07-28"}`)
	n, err = newNode(pinned, ev.env(), rec.config(t, LegacyProtocol))
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--protocol auto") {
		t.Errorf("pinned to 2026-07-28 against a legacy server: %v, want an error naming --protocol auto", err)
	}
	n.Stop(t.Context())
}

// TestProtocolOption: bad values are refused when the node is made.
func TestProtocolOption(t *testing.T) {
	for opts, want := range map[string]string{
		`{"transport":"http","url":"http://x/mcp","protocol":"2030-01-01"}`: "use auto",
		`{"transport":"sse","url":"http://x/sse","protocol":"2026-07-28"}`:  "no SSE transport",
		`{"transport":"http","url":"http://x/mcp","protocol":"2026-07-28"}`: "",
		`{"transport":"http","url":"http://x/mcp","protocol":"auto"}`:       "",
		`{"transport":"http","url":"http://x/mcp","protocol":"2025-06-18"}`: "",
	} {
		_, err := newNode(node.Spec{ID: "p", Kind: Kind, Options: json.RawMessage(opts)}, node.Env{}, defaultConfig())
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", opts, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", opts, err, want)
		}
	}
}

// TestServerAskingTheOldWay: a Go SDK server written for 2025-11-25 asks
// for sampling with a request of its own in the middle of a call; its SDK
// offers 2026-07-28 too, where that is refused and fails the call. With
// protocol auto, nerve then speaks 2025-11-25 with it and sends the call
// once more: the person is asked, the call succeeds, and the catalogue
// remembers the version. A node pinned to 2026-07-28 keeps its version.
func TestServerAskingTheOldWay(t *testing.T) {
	ev := newEvents()
	h := &fakeHooks{asked: make(chan string, 4)}
	ev.hooks = h
	env := ev.env()
	env.Dir = t.TempDir()
	n, err := newNode(node.Spec{ID: "mem", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp"}`)}, env, inMemory(t))
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	if v := n.NegotiatedProtocolVersion(); v != ModernProtocol {
		t.Fatalf("negotiated %s, want %s first", v, ModernProtocol)
	}
	res := callOK(t, n, "sample", `{"text":"q"}`, nil)
	if got := text(t, res); got != "answer from a person" {
		t.Errorf("sample = %q", got)
	}
	if v := n.NegotiatedProtocolVersion(); v != LegacyProtocol {
		t.Errorf("after the server asked the old way the node speaks %s, want %s", v, LegacyProtocol)
	}
	if b, _ := os.ReadFile(n.catalogPath()); !strings.Contains(string(b), `"protocolVersion":"`+LegacyProtocol+`"`) {
		t.Errorf("the catalogue does not remember %s", LegacyProtocol)
	}

	pinned, err := newNode(node.Spec{ID: "pin", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp","protocol":"2026-07-28"}`)}, ev.env(), inMemory(t))
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, pinned)
	r, err := pinned.CallTool(t.Context(), &node.CallRequest{Tool: "sample", Arguments: json.RawMessage(`{"text":"q"}`)})
	if err != nil || !r.IsError || pinned.NegotiatedProtocolVersion() != ModernProtocol {
		t.Errorf("pinned to 2026-07-28: %+v, %v, speaks %s; want the server's failure and 2026-07-28 kept", r, err, pinned.NegotiatedProtocolVersion())
	}
}

// ttlServer is an in-memory server whose lists carry ttl and cacheScope
// private; listed counts its tools/list requests.
func ttlServer(t *testing.T, ttl time.Duration) (config, func() int) {
	var mu sync.Mutex
	lists := 0
	cfg := defaultConfig()
	cfg.transport = func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		s := mcp.NewServer(&mcp.Implementation{Name: "ttl", Version: "1"}, &mcp.ServerOptions{
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
				c.TTLMs, c.CacheScope = int(ttl/time.Millisecond), "private"
			},
		})
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					mu.Lock()
					lists++
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		})
		ss, err := s.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return ct
	}
	return cfg, func() int {
		mu.Lock()
		defer mu.Unlock()
		return lists
	}
}

// TestListTTLKeptAndHonoured: a server of 2026-07-28 says how long its
// lists stay good (ttlMs) and who may keep them (cacheScope): node info
// and the catalogue keep both, a fresh list is not read again, and one
// past its ttl is read again at its next use.
func TestListTTLKeptAndHonoured(t *testing.T) {
	cfg, listed := ttlServer(t, time.Hour)
	env := newEvents().env()
	env.Dir = t.TempDir()
	spec := node.Spec{ID: "ttl", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp"}`)}
	n, err := newNode(spec, env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	if got := n.Info().Details["cache"]; fmt.Sprint(got) != "map[tools:ttl 1h0m0s, private]" {
		t.Errorf("node info cache = %v", got)
	}
	if b, _ := os.ReadFile(n.catalogPath()); !strings.Contains(string(b), `"cache":{"tools":{"ttl_ms":3600000,"scope":"private"`) {
		t.Errorf("the catalogue does not keep the ttl: %s", b)
	}
	before := listed()
	n.ListTools(t.Context())
	if got := listed(); got != before {
		t.Errorf("a fresh list was read again (%d → %d lists)", before, got)
	}

	cfg, listed = ttlServer(t, 100*time.Millisecond)
	n, err = newNode(spec, newEvents().env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	before = listed()
	// The point is that the ttl passes: this sleep waits for no event.
	time.Sleep(150 * time.Millisecond)
	if got := fmt.Sprint(n.Info().Details["cache"]); !strings.Contains(got, "(stale)") {
		t.Errorf("node info cache = %s, want it stale", got)
	}
	n.ListTools(t.Context())
	testutil.WaitFor(t, 10*time.Second, func() bool { return listed() > before }, "tools/list after the ttl passed")
}

// TestFailedRefreshKeepsLists: a refresh of the resources, templates and
// prompts (a list_changed notice, a ttl that passed) whose listing fails
// keeps what was read last; they must not vanish from every client until
// the server's next change.
func TestFailedRefreshKeepsLists(t *testing.T) {
	var fail atomic.Bool
	cfg := defaultConfig()
	cfg.transport = func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		s := mcp.NewServer(&mcp.Implementation{Name: "lists", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
		s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "says hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		s.AddResource(&mcp.Resource{URI: "test://a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if fail.Load() && method != "tools/list" && strings.HasSuffix(method, "/list") {
					return nil, fmt.Errorf("%s failed for this test", method)
				}
				return next(ctx, method, req)
			}
		})
		ss, err := s.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return ct
	}
	spec := node.Spec{ID: "lists", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"http://in-memory.invalid/mcp"}`)}
	n, err := newNode(spec, newEvents().env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	count := func() string {
		return fmt.Sprintf("%d prompts, %d resources, %d templates", len(n.Prompts()), len(n.Resources()), len(n.ResourceTemplates()))
	}
	if got := count(); got != "1 prompts, 1 resources, 1 templates" {
		t.Fatalf("after the start: %s", got)
	}
	n.mu.RLock()
	c := n.conn
	n.mu.RUnlock()
	fail.Store(true)
	if err := n.discover(t.Context(), c, listResources|listPrompts); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "1 prompts, 1 resources, 1 templates" {
		t.Errorf("after a refresh whose listings failed: %s; want the lists read last", got)
	}
}

// TestEraSwitchOutlivesItsCall: a node of protocol auto that reconnects
// in 2025-11-25 for a server that asked the old way does so whatever
// becomes of the call that found it out: a call cancelled in the middle
// of the reconnection (its client went away) leaves the node READY in
// 2025-11-25, not stopped or in ERROR for every other request.
func TestEraSwitchOutlivesItsCall(t *testing.T) {
	bin := gosdkfix.EverythingServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var switching atomic.Bool
	env := newEvents().env()
	env.OnState = func(from, to node.State, reason string) {
		if switching.Load() && to == node.Starting {
			cancel() // the client goes away while the node starts again
		}
	}
	n, err := newNode(stdioSpec("ev", []string{bin}), env, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	if got := n.Info().Details["protocol_version"]; got != ModernProtocol {
		t.Fatalf("protocol_version = %v before the switch, want %s", got, ModernProtocol)
	}
	switching.Store(true)
	if !n.speakLegacy(ctx) {
		t.Error("speakLegacy = false: the node did not switch")
	}
	if ctx.Err() == nil {
		t.Fatal("the call's context was not cancelled during the switch: the test did not test it")
	}
	if st := n.State(); st != node.Ready {
		t.Fatalf("after the switch the node is %s (%s), want READY", st, n.Info().Error)
	}
	if got := n.Info().Details["protocol_version"]; got != LegacyProtocol {
		t.Errorf("protocol_version = %v after the switch, want %s", got, LegacyProtocol)
	}
	res, err := n.CallTool(t.Context(), &node.CallRequest{Tool: "test_simple_text", Arguments: json.RawMessage(`{}`)})
	if err != nil || res.IsError {
		t.Errorf("a call after the switch: %+v, %v", res, err)
	}
}
