package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestSessionWatchSkipsCallMoves: a session watch delivers what may change
// what is served (here a node added) and not the READY ⇄ BUSY moves every
// call makes.
func TestSessionWatchSkipsCallMoves(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	b := NewSessionBackend(s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := b.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 3 {
		if _, err := b.Call(ctx, "echo", "identity", json.RawMessage(`{"text":"hi"}`), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	addNode(t, s, node.Spec{ID: "two", Kind: "identity"})
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("no event for the added node: %v", err)
		}
		if ev.Kind == session.EventState && callable(ev.From) && callable(ev.To) {
			t.Fatalf("the watch delivered a call's move %s → %s of %q", ev.From, ev.To, ev.Node)
		}
		if ev.Kind == session.EventNodeAdded && ev.Node == "two" {
			break
		}
	}
	// The added node's start is delivered: it changes what is served.
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("no READY for the added node: %v", err)
		}
		if ev.Kind == session.EventState && ev.Node == "two" && ev.To == node.Ready.String() {
			return
		}
	}
}
