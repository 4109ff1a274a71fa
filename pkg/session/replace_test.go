package session_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestReplaceInOneSave: a replace saves the session once, with the new
// spec in the old one's place (a process killed at any moment comes back
// with one or the other); the old node is stopped, the new one started,
// and a spec its factory refuses changes nothing.
func TestReplaceInOneSave(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var saves []string
	fs := &fakes{}
	s := newSession(t, fs, &session.Options{Save: func(specs []node.Spec) error {
		var ids []string
		for _, sp := range specs {
			ids = append(ids, sp.ID+":"+sp.Cwd)
		}
		mu.Lock()
		saves = append(saves, strings.Join(ids, ","))
		mu.Unlock()
		return nil
	}})
	old := add(t, s, "a", "fake")
	add(t, s, "b", identity.Kind)
	saves = nil

	n, err := s.Replace(ctx, node.Spec{ID: "a", Kind: "fake", Cwd: "/new"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(saves, "|"); got != "a:/new,b:" {
		t.Errorf("saves during the replace: %q, want one, with the new spec in the old one's place: %q", got, "a:/new,b:")
	}
	if old.State() != node.Stopped || n.State() != node.Ready {
		t.Errorf("after the replace the old node is %s, the new one %s; want STOPPED and READY", old.State(), n.State())
	}
	if got, _ := s.Node("a"); got != n {
		t.Error("the session does not hold the new node")
	}

	saves = nil
	if _, err := s.Replace(ctx, node.Spec{ID: "a", Kind: "nosuchkind"}); err == nil || !strings.Contains(err.Error(), "unknown node kind") {
		t.Errorf("replace with a spec no factory builds: %v", err)
	}
	if _, err := s.Replace(ctx, node.Spec{ID: "zz", Kind: "fake"}); !errors.Is(err, node.ErrNotFound) {
		t.Errorf("replace of a node that does not exist: %v, want node.ErrNotFound", err)
	}
	if got, _ := s.Node("a"); got != n || n.State() != node.Ready || len(saves) != 0 {
		t.Errorf("a refused replace changed the session (node %v, state %s, saves %q)", got, n.State(), saves)
	}
}

// TestCheckSeesTheOthers: a kind's check gets every other node's tools
// and specs, and nodes that cannot list their tools as down.
func TestCheckSeesTheOthers(t *testing.T) {
	ctx := context.Background()
	fs := &fakes{}
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	reg.Register("fake", fs.factory)
	var got *node.Catalogue
	reg.RegisterCheck("fake", func(_ context.Context, spec node.Spec, c *node.Catalogue) ([]string, error) {
		got = c
		if spec.Cwd == "bad" {
			return nil, errors.New("1:1: bad")
		}
		return []string{"1:2: careful"}, nil
	})
	s := session.New("test", reg, nil)
	t.Cleanup(func() { _ = s.Close(ctx) })
	add(t, s, "echo", identity.Kind)
	add(t, s, "self", "fake")
	fs.configure = func(f *fakeNode) { f.startErr = errors.New("boom") }
	if _, err := s.Add(ctx, node.Spec{ID: "broken", Kind: "fake"}); err == nil {
		t.Fatal("the broken node started")
	}

	warn, err := s.Check(ctx, node.Spec{ID: "self", Kind: "fake"})
	if err != nil || len(warn) != 1 || warn[0] != "1:2: careful" {
		t.Errorf("Check = %q, %v", warn, err)
	}
	if _, ok := got.Tools["echo.identity"]; !ok || got.Tools["self.t"] != nil {
		t.Errorf("the check saw tools %v; want every other node's, not its own", got.Tools)
	}
	if !strings.Contains(got.Down["broken"], `node "broken" is ERROR`) {
		t.Errorf("the check saw down nodes %v; want broken, with its state", got.Down)
	}
	if _, ok := got.Specs["echo"]; !ok || len(got.Specs) != 2 {
		t.Errorf("the check saw specs %v; want echo's and broken's", got.Specs)
	}
	if _, err := s.Check(ctx, node.Spec{ID: "x", Kind: "fake", Cwd: "bad"}); err == nil {
		t.Error("a check's error was lost")
	}
	if warn, err := s.Check(ctx, node.Spec{ID: "x", Kind: identity.Kind}); warn != nil || err != nil {
		t.Errorf("a kind without a check: %q %v", warn, err)
	}
}
