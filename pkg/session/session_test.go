package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// fakeNode is a node whose stop takes a while and whose tools can change,
// for the session behaviours identity cannot show.
type fakeNode struct {
	node.Base
	env       node.Env
	stopDelay time.Duration
	stopWait  func(context.Context) // if set, Stop waits on it instead of stopDelay
	startErr  error
	mu        sync.Mutex
	tools     []*mcp.Tool
	listed    int
	listErr   error // ListTools fails with it (a server with no catalogue)
}

func (f *fakeNode) Start(ctx context.Context) error {
	if err := f.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	if f.startErr != nil {
		_ = f.Machine.To(node.Error, f.startErr.Error())
		return f.startErr
	}
	return f.Machine.To(node.Ready, "")
}

func (f *fakeNode) Stop(ctx context.Context) error {
	if st := f.State(); st == node.Created || st == node.Stopped {
		return nil
	}
	if err := f.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	if f.stopWait != nil {
		f.stopWait(ctx)
	} else {
		select {
		case <-time.After(f.stopDelay):
		case <-ctx.Done():
		}
	}
	return f.Machine.To(node.Stopped, "")
}

func (f *fakeNode) Interrupt(context.Context) error { return nil }

func (f *fakeNode) ListTools(context.Context) ([]*mcp.Tool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed++
	if f.listErr != nil {
		return nil, f.listErr
	}
	return f.tools, nil
}

func (f *fakeNode) setTools(names ...string) {
	f.mu.Lock()
	f.tools = nil
	for _, n := range names {
		f.tools = append(f.tools, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	f.mu.Unlock()
	f.env.OnToolsChanged()
}

func (f *fakeNode) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := f.BeginCall(); err != nil {
		return nil, err
	}
	defer f.EndCall(false)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Tool}}}, nil
}

func (f *fakeNode) Info() node.Info { return f.BaseInfo() }

type fakes struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode
	// configure is applied to each new fake.
	configure func(*fakeNode)
}

func (fs *fakes) factory(spec node.Spec, env node.Env) (node.Node, error) {
	f := &fakeNode{env: env, tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}}
	f.Init(spec, env)
	if fs.configure != nil {
		fs.configure(f)
	}
	fs.mu.Lock()
	if fs.nodes == nil {
		fs.nodes = map[string]*fakeNode{}
	}
	fs.nodes[spec.ID] = f
	fs.mu.Unlock()
	return f, nil
}

func newSession(t *testing.T, fs *fakes, opts *session.Options) *session.Session {
	t.Helper()
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	if fs != nil {
		reg.Register("fake", fs.factory)
	}
	s := session.New("test", reg, opts)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func add(t *testing.T, s *session.Session, id, kind string) node.Node {
	t.Helper()
	n, err := s.Add(context.Background(), node.Spec{ID: id, Kind: kind})
	if err != nil {
		t.Fatalf("Add(%s): %v", id, err)
	}
	return n
}

func TestAddCallRemove(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, nil, nil)
	n := add(t, s, "echo", identity.Kind)
	if n.State() != node.Ready {
		t.Fatalf("state after Add = %s, want READY", n.State())
	}
	res, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"héllo"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "héllo" {
		t.Errorf("identity returned %q", got)
	}
	if err := s.Remove(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if n.State() != node.Stopped {
		t.Errorf("removed node is %s, want STOPPED", n.State())
	}
	if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity"}); !errors.Is(err, node.ErrNotFound) {
		t.Errorf("call after remove: %v, want ErrNotFound", err)
	}
}

func TestAddErrors(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, nil, nil)
	add(t, s, "echo", identity.Kind)
	tests := []struct {
		spec node.Spec
		want string
	}{
		{node.Spec{ID: "echo", Kind: identity.Kind}, `node "echo": node already exists`},
		{node.Spec{ID: "Echo", Kind: identity.Kind}, `invalid node id "Echo"`},
		{node.Spec{ID: "a.b", Kind: identity.Kind}, `invalid node id "a.b"`},
		{node.Spec{ID: "", Kind: identity.Kind}, `invalid node id ""`},
		{node.Spec{ID: "ok", Kind: "nope"}, `unknown node kind "nope" (known kinds: identity)`},
		{node.Spec{ID: "ok", Kind: identity.Kind, Command: []string{"x"}}, `identity node takes no command`},
	}
	for _, tt := range tests {
		_, err := s.Add(ctx, tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Add(%+v) = %v, want error containing %q", tt.spec, err, tt.want)
		}
	}
	if got := len(s.Nodes()); got != 1 {
		t.Errorf("after failed adds the session has %d nodes, want 1", got)
	}
}

func TestCallErrorsSayWhatToDo(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, nil, nil)
	add(t, s, "echo", identity.Kind)
	tests := []struct {
		node, tool, args string
		is               error
		want             string
	}{
		{"ecko", "identity", `{}`, node.ErrNotFound, `did you mean "echo"`},
		{"echo", "identiti", `{}`, node.ErrUnknownTool, `did you mean "identity"? (` + "`nerve call @echo ?`"},
		{"echo", "identity", `{"text":1}`, node.ErrBadArgs, `"text"`},
		{"echo", "identity", `{}`, node.ErrBadArgs, `"text"`},
	}
	for _, tt := range tests {
		_, err := s.Call(ctx, tt.node, &node.CallRequest{Tool: tt.tool, Arguments: json.RawMessage(tt.args)})
		if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Call(%s %s %s) = %v, want %v containing %q", tt.node, tt.tool, tt.args, err, tt.is, tt.want)
		}
	}
}

func TestEventsInOrder(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, nil, nil)
	sub := s.Subscribe(64)
	defer sub.Close()
	add(t, s, "echo", identity.Kind)
	if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"node_added echo",
		"state echo CREATED→STARTING",
		"state echo STARTING→READY",
		"call_start echo identity",
		"state echo READY→BUSY",
		"state echo BUSY→READY",
		"call_end echo identity",
		"state echo READY→STOPPING",
		"state echo STOPPING→STOPPED",
		"node_removed echo",
	}
	var got []string
	var lastSeq uint64
	for range want {
		select {
		case ev := <-sub.C:
			if ev.Seq <= lastSeq {
				t.Errorf("event seq %d after %d", ev.Seq, lastSeq)
			}
			lastSeq = ev.Seq
			s := ev.Kind + " " + ev.Node
			switch ev.Kind {
			case session.EventState:
				s += " " + ev.From + "→" + ev.To
			case session.EventCallStart, session.EventCallEnd:
				s += " " + ev.Tool
			}
			got = append(got, s)
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out; events so far:\n%s", strings.Join(got, "\n"))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlowSubscriberNeverBlocks(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, nil, nil)
	sub := s.Subscribe(4)
	defer sub.Close()
	add(t, s, "echo", identity.Kind)
	for range 100 {
		if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if sub.Dropped() == 0 {
		t.Error("a subscriber that never reads lost no events; the hub must have blocked or grown")
	}
	if n := len(sub.C); n != 4 {
		t.Errorf("subscriber buffer holds %d events, want 4 (the newest)", n)
	}
}

func TestToolCacheFollowsListChanged(t *testing.T) {
	ctx := context.Background()
	fs := &fakes{}
	s := newSession(t, fs, nil)
	add(t, s, "f", "fake")
	tools, err := s.Tools(ctx, "f")
	if err != nil || len(tools) != 1 {
		t.Fatalf("Tools = %v, %v", tools, err)
	}
	listed := fs.nodes["f"].listed
	if _, err := s.Tools(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if n := fs.nodes["f"].listed - listed; n != 0 {
		t.Errorf("ListTools called %d times for a second Tools call; want the cache to answer it", n)
	}
	sub := s.Subscribe(8)
	defer sub.Close()
	fs.nodes["f"].setTools("a", "b")
	if ev := <-sub.C; ev.Kind != session.EventTools || ev.Node != "f" {
		t.Errorf("event after list change = %+v, want tools f", ev)
	}
	tools, _ = s.Tools(ctx, "f")
	if len(tools) != 2 {
		t.Errorf("after list change Tools has %d tools, want 2", len(tools))
	}
	ts := s.Toolset(ctx)
	if _, ok := ts.Lookup("f.b"); !ok {
		t.Error("toolset lacks f.b after the list changed")
	}
	res, err := s.CallTool(ctx, "f__a", nil, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "a" {
		t.Errorf("CallTool(f__a) = %v, %v", res, err)
	}
}

func TestFailedStartStaysInError(t *testing.T) {
	ctx := context.Background()
	fs := &fakes{configure: func(f *fakeNode) { f.startErr = errors.New("boom: not installed") }}
	s := newSession(t, fs, nil)
	n, err := s.Add(ctx, node.Spec{ID: "bad", Kind: "fake"})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Add = %v, want the start error", err)
	}
	info, err := s.Info("bad")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != node.Error || info.Error != "boom: not installed" {
		t.Errorf("info = %s %q, want ERROR with reason", info.State, info.Error)
	}
	_, err = s.Call(ctx, "bad", &node.CallRequest{Tool: "t"})
	if err == nil {
		t.Error("call on an ERROR node succeeded")
	}
	fs.nodes["bad"].startErr = nil
	if err := s.Restart(ctx, "bad"); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if n.State() != node.Ready {
		t.Errorf("after restart: %s, want READY", n.State())
	}
}

func TestCloseStopsInParallelWithinDeadline(t *testing.T) {
	// Each stop waits until all six have begun: stops made one after
	// another never get there, and Close runs into its deadline.
	ids := []string{"a", "b", "c", "d", "e", "f"}
	var began sync.WaitGroup
	began.Add(len(ids))
	all := make(chan struct{})
	go func() { began.Wait(); close(all) }()
	fs := &fakes{configure: func(f *fakeNode) {
		f.stopWait = func(ctx context.Context) {
			began.Done()
			select {
			case <-all:
			case <-ctx.Done():
			}
		}
	}}
	s := newSession(t, fs, nil)
	for _, id := range ids {
		add(t, s, id, "fake")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close = %v: the nodes were not stopped in parallel", err)
	}
	for id, f := range fs.nodes {
		if f.State() != node.Stopped {
			t.Errorf("node %s is %s after Close", id, f.State())
		}
	}
	if _, err := s.Add(context.Background(), node.Spec{ID: "z", Kind: "fake"}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
}

func TestCloseHonoursDeadline(t *testing.T) {
	fs := &fakes{configure: func(f *fakeNode) { f.stopDelay = time.Hour }}
	s := newSession(t, fs, nil)
	add(t, s, "slow", "fake")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := s.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want deadline exceeded", err)
	}
}

func TestSaveOnEveryChange(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var saves [][]string
	s := newSession(t, nil, &session.Options{Save: func(specs []node.Spec) error {
		ids := []string{}
		for _, sp := range specs {
			ids = append(ids, sp.ID+":"+string(sp.State))
		}
		mu.Lock()
		saves = append(saves, ids)
		mu.Unlock()
		return nil
	}})
	add(t, s, "a", identity.Kind)
	add(t, s, "b", identity.Kind)
	if err := s.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, sv := range saves {
		got = append(got, strings.Join(sv, ","))
	}
	want := "a:|a:,b:|b:"
	if strings.Join(got, "|") != want {
		t.Errorf("saves = %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestRestoreStartsEveryNode(t *testing.T) {
	fs := &fakes{configure: func(f *fakeNode) {
		if f.ID() == "broken" {
			f.startErr = errors.New("server exited with status 1")
		}
	}}
	s := newSession(t, fs, nil)
	err := s.Restore(context.Background(), []node.Spec{
		{ID: "a", Kind: "fake"}, {ID: "broken", Kind: "fake"}, {ID: "gone", Kind: "nokind"}, {ID: "b", Kind: identity.Kind},
	})
	if err == nil || !strings.Contains(err.Error(), `unknown node kind "nokind"`) {
		t.Errorf("Restore error = %v, want the unknown kind reported", err)
	}
	want := map[string]node.State{"a": node.Ready, "broken": node.Error, "b": node.Ready}
	for _, info := range s.Infos() {
		if info.State != want[info.ID] {
			t.Errorf("%s is %s, want %s", info.ID, info.State, want[info.ID])
		}
		delete(want, info.ID)
	}
	if len(want) != 0 {
		t.Errorf("nodes missing after restore: %v", want)
	}
}

func TestHooksDeclineWhenNoOneIsAttached(t *testing.T) {
	fs := &fakes{}
	s := newSession(t, fs, nil)
	add(t, s, "f", "fake")
	hooks := fs.nodes["f"].env.Hooks
	res, err := hooks.Elicit(context.Background(), "f", &mcp.ElicitParams{Message: "name?"})
	if err != nil || res.Action != "decline" {
		t.Errorf("Elicit with no one attached = %+v, %v; want decline", res, err)
	}
	if _, err := hooks.Sample(context.Background(), "f", &mcp.CreateMessageParams{}); !errors.Is(err, session.ErrNoOneToAsk) {
		t.Errorf("Sample with no one attached = %v, want ErrNoOneToAsk", err)
	}
}

func TestConcurrentCallsAndChanges(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, &fakes{}, nil)
	add(t, s, "echo", identity.Kind)
	sub := s.Subscribe(16)
	defer sub.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			id := string(rune('a' + i))
			if _, err := s.Add(ctx, node.Spec{ID: id, Kind: "fake"}); err != nil {
				t.Error(err)
			}
			_ = s.Toolset(ctx)
			if err := s.Remove(ctx, id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if info, _ := s.Info("echo"); info.State != node.Ready || info.InFlight != 0 || info.Calls != 1600 {
		t.Errorf("after concurrent calls: %+v; want READY, 0 in flight, 1600 calls", info)
	}
}

func TestSubscribeFilteredSeesOnlyWhatItKeeps(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, nil, nil)
	sub := s.SubscribeFiltered(8, func(ev *session.Event) bool { return ev.Kind == session.EventNodeRemoved })
	defer sub.Close()
	add(t, s, "echo", identity.Kind)
	for range 20 {
		if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub.C:
		if ev.Kind != session.EventNodeRemoved || ev.Node != "echo" {
			t.Errorf("first event = %s %s, want node_removed echo", ev.Kind, ev.Node)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no node_removed event")
	}
	if len(sub.C) != 0 || sub.Dropped() != 0 {
		t.Errorf("filtered subscription holds %d more events (%d dropped); want none", len(sub.C), sub.Dropped())
	}
}
