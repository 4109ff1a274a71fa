package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestHTTPServerCap: every distinct ?tools= is a server of its own, so
// the handler keeps at most maxServers: idle ones are stopped to make
// room, and with every one in use the next is refused.
func TestHTTPServerCap(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	h, err := NewHTTPHandler(&HTTPOptions{Token: NewToken(), Session: func(context.Context, string) (*session.Session, error) { return s, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	grace := idleGrace
	defer func() { idleGrace = grace }()

	idleGrace = -1 // every server without a client may go
	for i := range maxServers + 5 {
		if _, err := h.server(t.Context(), serverKey{session: "test", names: NamesQualified, tools: fmt.Sprintf("echo.*,!echo.x%d", i)}); err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
	}
	h.mu.Lock()
	n := len(h.servers)
	h.mu.Unlock()
	if n > maxServers {
		t.Errorf("the handler keeps %d servers, want at most %d", n, maxServers)
	}

	idleGrace = grace // none is old enough to go: the next is refused
	h.mu.Lock()
	for len(h.servers) < maxServers {
		h.servers[serverKey{session: "filler", tools: fmt.Sprint(len(h.servers))}] = &httpServer{s: New(NewSessionBackend(s), nil), done: make(chan struct{}), stop: func() {}, made: time.Now()}
	}
	h.mu.Unlock()
	if _, err := h.server(t.Context(), serverKey{session: "test", names: NamesQualified, tools: "one.more"}); !errors.Is(err, errTooMany) {
		t.Errorf("server %d: %v, want errTooMany", maxServers+1, err)
	}
}
