package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/internal/nodes/graph"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// sleeper is a node kind for these tests: tool "sleep {ms}" waits, or
// until its call is cancelled.
type sleeper struct{ node.Base }

var sleepTool = &mcp.Tool{Name: "sleep", InputSchema: map[string]any{
	"type": "object", "properties": map[string]any{"ms": map[string]any{"type": "number"}},
}}

func newSleeper(spec node.Spec, env node.Env) (node.Node, error) {
	n := &sleeper{}
	n.Init(spec, env)
	return n, nil
}

func (n *sleeper) Start(context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	return n.Machine.To(node.Ready, "")
}

func (n *sleeper) Stop(context.Context) error {
	if n.State() == node.Stopped || n.State() == node.Created {
		return nil
	}
	_ = n.Machine.To(node.Stopping, "")
	return n.Machine.To(node.Stopped, "")
}
func (n *sleeper) Interrupt(context.Context) error                { return nil }
func (n *sleeper) ListTools(context.Context) ([]*mcp.Tool, error) { return []*mcp.Tool{sleepTool}, nil }
func (n *sleeper) Info() node.Info                                { return n.BaseInfo() }
func (n *sleeper) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	var a struct{ MS float64 }
	_ = json.Unmarshal(req.Arguments, &a)
	d := time.Hour
	if a.MS > 0 {
		d = time.Duration(a.MS * float64(time.Millisecond))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		n.EndCall(false)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil
	case <-ctx.Done():
		n.EndCall(true)
		return nil, ctx.Err()
	}
}

func newSession(t testing.TB) *session.Session { return newSessionIn(t, "") }

// newSessionIn is a session that keeps its nodes' files under dir, as the
// daemon's do (run records on disk); "" keeps them in memory.
func newSessionIn(t testing.TB, dir string) *session.Session {
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	reg.Register(graph.Kind, graph.New)
	reg.Register("sleeper", newSleeper)
	s := session.New("test", reg, &session.Options{Dir: dir})
	t.Cleanup(func() { s.Close(context.Background()) })
	ctx := context.Background()
	for _, spec := range []node.Spec{{ID: "echo", Kind: identity.Kind}, {ID: "zz", Kind: "sleeper"}} {
		if _, err := s.Add(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func addGraph(t testing.TB, s *session.Session, id, src string) {
	t.Helper()
	opts, _ := json.Marshal(graphlang.Options{Source: src})
	if _, err := s.Add(context.Background(), node.Spec{ID: id, Kind: graph.Kind, Options: opts}); err != nil {
		t.Fatal(err)
	}
}

// TestCancelLeavesNoCallInFlight cancels a run (as Ctrl-C does) while two
// steps wait in another node: both calls end, and the graph stays usable.
func TestCancelLeavesNoCallInFlight(t *testing.T) {
	s := newSession(t)
	addGraph(t, s, "g", "steps:\n  a: {call: zz.sleep}\n  b: {call: zz.sleep}\n  c: {call: echo.identity, after: [a, b], args: {text: done}}\n")
	sub := s.Subscribe(64)
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "g", &node.CallRequest{Tool: "run"})
		done <- err
	}()
	started := 0
	deadline := time.After(30 * time.Second)
	for started < 2 {
		select {
		case ev := <-sub.C:
			if ev.Kind == session.EventCallStart && ev.Node == "zz" {
				started++
			}
		case <-deadline:
			t.Fatal("the steps did not start")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	for _, id := range []string{"zz", "g"} {
		if info, _ := s.Info(id); info.InFlight != 0 || info.State != node.Ready {
			t.Errorf("%s after cancel: %d in flight, %s", id, info.InFlight, info.State)
		}
	}
}

// TestGraphCallingGraphsAtRunTime: graphs that call each other are caught
// when they run, even if they got past the add-time check (added in an
// order that could not see the cycle).
func TestGraphCycleAtRunTime(t *testing.T) {
	s := newSession(t)
	addGraph(t, s, "a", "steps:\n  x: {call: b.run}\n")
	addGraph(t, s, "b", "steps:\n  y: {call: a.run}\n")
	res, err := s.Call(context.Background(), "a", &node.CallRequest{Tool: "run"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "graph cycle: a → b → a") {
		t.Errorf("result %v %q", res.IsError, text)
	}
}

func TestParallelStepsThroughSession(t *testing.T) {
	s := newSession(t)
	var b strings.Builder
	b.WriteString("steps:\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  s%d: {call: zz.sleep, args: {ms: 200}}\n", i)
	}
	addGraph(t, s, "par", b.String())
	sub := s.Subscribe(64)
	defer sub.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "par", &node.CallRequest{Tool: "run"})
		done <- err
	}()
	// All eight are in flight at once before any ends.
	inFlight := 0
	for inFlight < 8 {
		select {
		case ev := <-sub.C:
			if ev.Node == "zz" && ev.Kind == session.EventCallStart {
				inFlight++
			}
			if ev.Node == "zz" && ev.Kind == session.EventCallEnd {
				t.Fatalf("a step ended with only %d started", inFlight)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("steps did not start")
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
