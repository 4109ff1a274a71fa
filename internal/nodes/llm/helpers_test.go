package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// toolbox is a node kind for tests whose tools and behaviour each test
// chooses: tool names an MCP server might have (dots, 80 characters), a
// tool that fails, a tool that waits for a barrier.
type toolbox struct {
	node.Base
	tools []*mcp.Tool
	call  func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

func (b *toolbox) Start(context.Context) error {
	if err := b.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	return b.Machine.To(node.Ready, "")
}

func (b *toolbox) Stop(context.Context) error {
	if st := b.State(); st == node.Created || st == node.Stopped {
		return nil
	}
	_ = b.Machine.To(node.Stopping, "")
	return b.Machine.To(node.Stopped, "")
}

func (b *toolbox) Interrupt(context.Context) error                { return nil }
func (b *toolbox) ListTools(context.Context) ([]*mcp.Tool, error) { return b.tools, nil }
func (b *toolbox) Info() node.Info                                { return b.BaseInfo() }
func (b *toolbox) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := b.BeginCall(); err != nil {
		return nil, err
	}
	res, err := b.call(ctx, req.Tool, req.Arguments)
	b.EndCall(err != nil)
	return res, err
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func objectSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	}
	return s
}

// harness is a session with an identity node "echo", optional toolbox
// nodes and an llm node "agent" talking to a scripted server.
type harness struct {
	t    testing.TB
	s    *session.Session
	srv  *llmserver.Server
	url  string // the model server's URL, when it is not srv
	mu   sync.Mutex
	save []node.Spec
}

type boxSpec struct {
	id    string
	tools []*mcp.Tool
	call  func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

func registry(boxes ...boxSpec) *session.Registry {
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	reg.Register(llm.Kind, llm.New)
	byID := map[string]boxSpec{}
	for _, b := range boxes {
		byID[b.id] = b
	}
	reg.Register("toolbox", func(spec node.Spec, env node.Env) (node.Node, error) {
		b := byID[spec.ID]
		n := &toolbox{tools: b.tools, call: b.call}
		n.Init(spec, env)
		return n, nil
	})
	return reg
}

func newHarness(t testing.TB, srv *llmserver.Server, opts llm.Options, boxes ...boxSpec) *harness {
	t.Helper()
	return newHarnessAt(t, srv, srv.URL, srv.Close, opts, boxes...)
}

// newHarnessAt is newHarness with a model server at url (the Anthropic
// one), closed by closeSrv at the end of the test.
func newHarnessAt(t testing.TB, srv *llmserver.Server, url string, closeSrv func(), opts llm.Options, boxes ...boxSpec) *harness {
	t.Helper()
	h := &harness{t: t, srv: srv, url: url}
	h.s = session.New("test", registry(boxes...), &session.Options{Save: func(specs []node.Spec) error {
		h.mu.Lock()
		h.save = specs
		h.mu.Unlock()
		return nil
	}})
	t.Cleanup(func() { _ = h.s.Close(context.Background()) })
	t.Cleanup(closeSrv)
	ctx := context.Background()
	if _, err := h.s.Add(ctx, node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		t.Fatal(err)
	}
	for _, b := range boxes {
		if _, err := h.s.Add(ctx, node.Spec{ID: b.id, Kind: "toolbox"}); err != nil {
			t.Fatal(err)
		}
	}
	h.addAgent("agent", opts)
	return h
}

func (h *harness) addAgent(id string, opts llm.Options) {
	h.t.Helper()
	if opts.BaseURL == "" {
		opts.BaseURL = h.url
	}
	if opts.Model == "" {
		opts.Model = "test-model"
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.s.Add(context.Background(), node.Spec{ID: id, Kind: llm.Kind, Options: raw}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) agent() *llm.Node {
	h.t.Helper()
	n, err := h.s.Node("agent")
	if err != nil {
		h.t.Fatal(err)
	}
	return n.(*llm.Node)
}

func (h *harness) specs() []node.Spec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.save
}

// recorder collects a call's events.
type recorder struct {
	mu     sync.Mutex
	events []node.CallEvent
}

func (r *recorder) observe(ev node.CallEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, ev := range r.events {
		if ev.Kind == node.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// steps returns the Step names in order.
func (r *recorder) steps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if ev.Kind == node.EventStep {
			out = append(out, ev.Step)
		}
	}
	return out
}

// stepData returns the Data of every step named name, decoded.
func (r *recorder) stepData(name string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, ev := range r.events {
		if ev.Kind == node.EventStep && ev.Step == name {
			var m map[string]any
			_ = json.Unmarshal(ev.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

// chat calls agent.chat through the session, as the Commander does.
func (h *harness) chat(ctx context.Context, msg string, rec *recorder) (*mcp.CallToolResult, error) {
	args, _ := json.Marshal(map[string]string{"message": msg})
	req := &node.CallRequest{Tool: llm.ToolName, Arguments: args}
	if rec != nil {
		req.Observe = rec.observe
	}
	return h.s.Call(ctx, "agent", req)
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T", res.Content[0])
	}
	return tc.Text
}
