package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// gatedNode is a lazy node with a catalogue, as an mcp node after a daemon
// restart: it lists its tools from the catalogue while not running, not
// while it starts or is in ERROR, and its start ends when its gate opens.
type gatedNode struct {
	node.Base
	gate    chan struct{}
	mu      sync.Mutex
	stopped chan struct{} // closed by Stop: ends a start in progress
}

func (n *gatedNode) Start(ctx context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	n.mu.Lock()
	stopped := make(chan struct{})
	n.stopped = stopped
	n.mu.Unlock()
	select {
	case <-n.gate:
		return n.Machine.ToIf(node.Ready, "", node.Starting)
	case <-stopped:
		return context.Canceled
	case <-ctx.Done():
		n.Machine.To(node.Error, "the start was cancelled")
		return ctx.Err()
	}
}

func (n *gatedNode) Stop(context.Context) error {
	n.mu.Lock()
	if n.stopped != nil {
		close(n.stopped)
		n.stopped = nil
	}
	n.mu.Unlock()
	if st := n.State(); st == node.Created || st == node.Stopped {
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	return n.Machine.To(node.Stopped, "")
}

func (n *gatedNode) Interrupt(context.Context) error { return nil }
func (n *gatedNode) Info() node.Info                 { return n.BaseInfo() }
func (n *gatedNode) Catalogued() bool                { return true }
func (n *gatedNode) StartsLazily() bool              { return true }

func (n *gatedNode) ListTools(context.Context) ([]*mcp.Tool, error) {
	switch st, reason := n.Machine.Get(); st {
	case node.Ready, node.Busy, node.Created, node.Stopped:
		return []*mcp.Tool{{Name: "echo", Description: "echoes a word back", InputSchema: map[string]any{"type": "object"}}}, nil
	default:
		return nil, node.NotReady(n.ID(), st, reason)
	}
}

func (n *gatedNode) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	defer n.EndCall(false)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: n.ID() + " ok"}}}, nil
}

// gatedSession restores lazy gated nodes ids (CREATED, catalogued) and an
// identity node; open(id) lets id's start end.
func gatedSession(t *testing.T, ids ...string) (s *session.Session, open func(id string)) {
	t.Helper()
	gates := map[string]chan struct{}{}
	var specs []node.Spec
	for _, id := range ids {
		gates[id] = make(chan struct{})
		specs = append(specs, node.Spec{ID: id, Kind: "gated"})
	}
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	reg.Register("gated", func(spec node.Spec, env node.Env) (node.Node, error) {
		n := &gatedNode{gate: gates[spec.ID]}
		n.Init(spec, env)
		return n, nil
	})
	s = session.New("test", reg, nil)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	if err := s.Restore(t.Context(), specs); err != nil {
		t.Fatal(err)
	}
	var once sync.Map
	return s, func(id string) {
		if _, done := once.LoadOrStore(id, true); !done {
			close(gates[id])
		}
	}
}

// stateOf waits until node id is in state want.
func stateOf(t *testing.T, s *session.Session, id string, want node.State) {
	t.Helper()
	sub := s.Subscribe(64)
	defer sub.Close()
	for {
		if info, _ := s.Info(id); info.State == want {
			return
		}
		select {
		case <-sub.C:
		case <-t.Context().Done():
			t.Fatalf("node %s never became %s", id, want)
		}
	}
}

// callResult is a tools/call's answer.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

func callAsync(cs *mcp.ClientSession, name string) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		ch <- callResult{res, err}
	}()
	return ch
}

// TestStartingNodesKeepTheirTools: while one client's call starts g2, g1
// comes up; g2's tools stay served, and another client's first call of
// g2.echo waits for the start instead of "unknown tool" (issue 27: 4–10 of
// 20 MCP clients got -32602 after a daemon restart, as each node that came
// up made the server withdraw the tools of those still starting).
func TestStartingNodesKeepTheirTools(t *testing.T) {
	s, open := gatedSession(t, "g1", "g2")
	srv := serve(t, NewSessionBackend(s), nil)
	cs1, ev := connect(t, srv, nil)
	cs2, _ := connect(t, srv, nil)

	first1, first2 := callAsync(cs1, "g1.echo"), callAsync(cs1, "g2.echo")
	stateOf(t, s, "g1", node.Starting)
	stateOf(t, s, "g2", node.Starting)
	open("g1")
	if r := <-first1; r.err != nil || resultText(r.res) != "g1 ok" {
		t.Fatalf("first call of g1.echo: %v %s", r.err, mustJSON(r.res))
	}
	// The server handled g1's move to READY before it saw z added.
	addNode(t, s, node.Spec{ID: "z", Kind: "identity"})
	names := waitTools(t, cs1, ev, "z listed", func(n []string) bool { return len(n) == 3 })
	if want := []string{"g1.echo", "g2.echo", "z.identity"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("tools while g2 starts = %v, want %v", names, want)
	}
	second := callAsync(cs2, "g2.echo")
	open("g2")
	for _, r := range []callResult{<-first2, <-second} {
		if r.err != nil || r.res.IsError || resultText(r.res) != "g2 ok" {
			t.Errorf("a call of g2.echo made while it started: %v %s", r.err, mustJSON(r.res))
		}
	}
}

// TestNodeModeKeepsTools: `nerve mcp serve --node` lists the node's tools
// while it is not running, while it starts and when it is held stopped; a
// call then says that it is stopped and what starts it.
func TestNodeModeKeepsTools(t *testing.T) {
	s, open := gatedSession(t, "g")
	srv := serve(t, NewSessionBackend(s), &Options{Node: "g"})
	cs, _ := connect(t, srv, nil)
	if names := toolNames(t, cs); strings.Join(names, " ") != "echo" {
		t.Fatalf("node mode, node not started: %v", names)
	}
	call := callAsync(cs, "echo")
	stateOf(t, s, "g", node.Starting)
	if names := toolNames(t, cs); strings.Join(names, " ") != "echo" {
		t.Errorf("node mode, node starting: %v", names)
	}
	open("g")
	if r := <-call; r.err != nil || resultText(r.res) != "g ok" {
		t.Fatalf("first call: %v %s", r.err, mustJSON(r.res))
	}
	if err := s.Stop(t.Context(), "g"); err != nil {
		t.Fatal(err)
	}
	r := <-callAsync(cs, "echo")
	if r.err != nil || !r.res.IsError || !strings.Contains(resultText(r.res), "start it with `nerve node start g`") {
		t.Errorf("a call to the stopped node: %v %s", r.err, mustJSON(r.res))
	}
	if names := toolNames(t, cs); strings.Join(names, " ") != "echo" {
		t.Errorf("node mode, node stopped: %v", names)
	}
}

// TestDiscoverSaysTheState: search_tools and describe_tool find the tools
// of nodes that are starting or stopped and say what a call meets;
// call_tool of a stopped node's tool is an isError result with the fix.
func TestDiscoverSaysTheState(t *testing.T) {
	s, open := gatedSession(t, "g1", "g2", "g3")
	srv := serve(t, NewSessionBackend(s), &Options{Discover: true})
	cs, _ := connect(t, srv, nil)
	started := make(chan error, 1)
	go func() { _, err := s.Ready(context.Background(), "g2"); started <- err }()
	defer func() {
		open("g2")
		if err := <-started; err != nil {
			t.Errorf("starting g2: %v", err)
		}
	}()
	stateOf(t, s, "g2", node.Starting)
	if err := s.Stop(t.Context(), "g3"); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolSearch, Arguments: map[string]any{"query": "echo a word", "limit": 10}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %s", err, mustJSON(res))
	}
	var out searchResult
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, f := range out.Tools {
		states[f.Name] = f.State
	}
	for name, want := range map[string]string{
		"g1.echo": "its first call starts it",
		"g2.echo": `node "g2" is STARTING: a call waits for its start`,
		"g3.echo": "start it with `nerve node start g3`",
	} {
		if !strings.Contains(states[name], want) {
			t.Errorf("search_tools: %s state %q, want %q (all: %v)", name, states[name], want, states)
		}
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolDescribe, Arguments: map[string]any{"name": "g3.echo"}})
	if err != nil || !strings.Contains(resultText(res), `"state":"node \"g3\" is STOPPED`) {
		t.Errorf("describe_tool of a stopped node's tool: %v %s", err, resultText(res))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "g3.echo"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "start it with `nerve node start g3`") {
		t.Errorf("call_tool of a stopped node's tool: %v %s", err, mustJSON(res))
	}
}
