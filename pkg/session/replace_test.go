package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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
// and specs, and nodes that never listed their tools as down.
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
	fs.configure = func(f *fakeNode) { f.startErr, f.listErr = errors.New("boom"), errors.New("not running") }
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

// TestReplaceIf: a replace with the tag of the spec the caller read
// succeeds; one with a stale tag (someone replaced the node, or the node
// saved its state, since) fails with ErrChanged and changes nothing; of
// callers that read the same spec at once, exactly one succeeds.
func TestReplaceIf(t *testing.T) {
	ctx := context.Background()
	var saves atomic.Int32
	fs := &fakes{}
	s := newSession(t, fs, &session.Options{Save: func([]node.Spec) error { saves.Add(1); return nil }})
	add(t, s, "a", "fake")
	tagOf := func() string {
		t.Helper()
		spec, err := s.Spec("a")
		if err != nil {
			t.Fatal(err)
		}
		return session.SpecTag(spec)
	}
	read := tagOf()
	if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(read) {
		t.Fatalf("SpecTag = %s, want a strong entity tag of 16 hex digits", read)
	}

	one, err := s.ReplaceIf(ctx, node.Spec{ID: "a", Kind: "fake", Cwd: "/one"}, []string{read})
	if err != nil {
		t.Fatalf("ReplaceIf with the current tag: %v", err)
	}
	if now := tagOf(); now == read || now != session.SpecTag(node.Spec{ID: "a", Kind: "fake", Cwd: "/one"}) {
		t.Errorf("after the replace the tag is %s (was %s); want the new spec's", now, read)
	}

	before := saves.Load()
	for _, stale := range [][]string{{read}, {"W/" + tagOf()}, {`"0000000000000000"`}} {
		if _, err := s.ReplaceIf(ctx, node.Spec{ID: "a", Kind: "fake", Cwd: "/two"}, stale); !errors.Is(err, session.ErrChanged) ||
			!strings.Contains(err.Error(), "run the command again") {
			t.Errorf("ReplaceIf with %q: %v, want ErrChanged saying to run the command again", stale, err)
		}
	}
	if spec, _ := s.Spec("a"); spec.Cwd != "/one" || saves.Load() != before {
		t.Errorf("refused replaces changed the node: cwd %q, %d saves", spec.Cwd, saves.Load()-before)
	}
	if got, _ := s.Node("a"); got != one || one.State() != node.Ready {
		t.Errorf("refused replaces changed the node: %v in %s", got, one.State())
	}

	// A list matches if one of its tags does.
	if _, err := s.ReplaceIf(ctx, node.Spec{ID: "a", Kind: "fake", Cwd: "/three"}, []string{read, tagOf()}); err != nil {
		t.Errorf("ReplaceIf with a list holding the current tag: %v", err)
	}

	// The node's own state is part of its saved spec: a tag read before
	// it saved state is stale.
	read = tagOf()
	n, _ := s.Node("a")
	if err := n.(*fakeNode).env.SaveState(json.RawMessage(`{"turn":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplaceIf(ctx, node.Spec{ID: "a", Kind: "fake"}, []string{read}); !errors.Is(err, session.ErrChanged) {
		t.Errorf("ReplaceIf with the tag read before the node saved its state: %v, want ErrChanged", err)
	}

	// Eight callers read the same spec and replace it at once: one wins,
	// the others are told, and the spec is the winner's.
	read = tagOf()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.ReplaceIf(ctx, node.Spec{ID: "a", Kind: "fake", Cwd: fmt.Sprintf("/racer%d", i)}, []string{read})
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Errorf("racers %d and %d both replaced the spec they read", winner, i)
		case !errors.Is(err, session.ErrChanged):
			t.Errorf("racer %d: %v, want nil or ErrChanged", i, err)
		}
	}
	if spec, _ := s.Spec("a"); winner < 0 || spec.Cwd != fmt.Sprintf("/racer%d", winner) {
		t.Errorf("after the race the spec is %+v, winner %d", spec, winner)
	}
}
