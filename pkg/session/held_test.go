package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Issue 21: a held node (its restore killed the daemon last time) is in
// ERROR with the reason, is saved with its spec, refuses calls, and
// Restart builds and starts the real node.
func TestHoldThenRestart(t *testing.T) {
	var saved []node.Spec
	s := newSession(t, nil, &session.Options{Save: func(specs []node.Spec) error { saved = specs; return nil }})
	ctx := context.Background()
	if _, err := s.Hold(node.Spec{ID: "h", Kind: "identity"}, "the daemon died while restoring this node last time"); err != nil {
		t.Fatal(err)
	}
	info, err := s.Info("h")
	if err != nil || info.State != node.Error || !strings.Contains(info.Error, "died while restoring") {
		t.Fatalf("held node: %+v, %v", info, err)
	}
	if _, err := s.Call(ctx, "h", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)}); !errors.Is(err, node.ErrNotReady) {
		t.Errorf("a call of a held node: %v; want ErrNotReady", err)
	}
	add(t, s, "other", "identity") // saves every spec
	if len(saved) != 2 || saved[0].ID != "h" {
		t.Errorf("saved specs %v; want the held node's kept", saved)
	}
	if err := s.Restart(ctx, "h"); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if st := mustInfo(t, s, "h").State; st != node.Ready {
		t.Fatalf("after Restart: %s", st)
	}
	res, err := s.Call(ctx, "h", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"back"}`)})
	if err != nil || res.IsError {
		t.Fatalf("a call after Restart: %v", err)
	}
	if _, err := s.Hold(node.Spec{ID: "h", Kind: "identity"}, "x"); !errors.Is(err, session.ErrExists) {
		t.Errorf("holding an id in use: %v", err)
	}
}

func mustInfo(t *testing.T, s *session.Session, id string) node.Info {
	t.Helper()
	info, err := s.Info(id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}
