package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestStopHoldsTheNode: Stop keeps the node (and saves the stop), keeps
// its tools in the toolset, refuses calls naming `nerve node start`;
// a restore leaves it stopped; Start brings it back and clears the stop.
func TestStopHoldsTheNode(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var saved []node.Spec
	save := func(specs []node.Spec) error { mu.Lock(); saved = specs; mu.Unlock(); return nil }
	s := newSession(t, nil, &session.Options{Save: save})
	add(t, s, "echo", identity.Kind)
	if err := s.Stop(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx, "echo"); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if info, _ := s.Info("echo"); info.State != node.Stopped || !s.HeldStopped("echo") {
		t.Errorf("after Stop: %s, held %v", info.State, s.HeldStopped("echo"))
	}
	mu.Lock()
	specs := append([]node.Spec(nil), saved...)
	mu.Unlock()
	if len(specs) != 1 || !specs[0].Stopped {
		t.Fatalf("saved specs %+v; want echo saved stopped", specs)
	}
	// Its tools stay listed (issue 27): a call says it is stopped and
	// what starts it.
	if ts := s.Toolset(ctx); ts.Len() != 1 {
		t.Errorf("a stopped node's tools left the toolset: %v", ts.Tools())
	}
	_, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)})
	if !errors.Is(err, node.ErrNotReady) || !strings.Contains(err.Error(), "nerve node start echo") {
		t.Errorf("a call to a stopped node: %v", err)
	}

	// Another session restores the saved spec: the node stays stopped.
	r := newSession(t, nil, nil)
	if err := r.Restore(ctx, specs); err != nil {
		t.Fatal(err)
	}
	if info, _ := r.Info("echo"); info.State != node.Stopped {
		t.Errorf("restored: %s, want STOPPED", info.State)
	}
	if err := r.Start(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if info, _ := r.Info("echo"); info.State != node.Ready || r.HeldStopped("echo") {
		t.Errorf("after Start: %s, held %v", info.State, r.HeldStopped("echo"))
	}
	if _, err := r.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Errorf("a call after Start: %v", err)
	}
	if err := r.Start(ctx, "echo"); err != nil {
		t.Errorf("Start of a running node: %v", err)
	}
	var nf *session.NotFoundError
	if err := r.Stop(ctx, "nope"); !errors.As(err, &nf) {
		t.Errorf("Stop of an unknown node: %v", err)
	}
}
