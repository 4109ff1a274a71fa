package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/node"
)

// The session keeps one tool index: calls do not rebuild it, a change of
// the catalogue does (issue 28, item 4).
func TestSearchIndexPerCatalogue(t *testing.T) {
	ctx := context.Background()
	fs := &fakes{}
	s := newSession(t, fs, nil)
	add(t, s, "echo", identity.Kind)
	ix := s.SearchIndex(ctx)
	if r := s.SearchTools(ctx, "return the text unchanged", nil); len(r.Hits) == 0 || r.Hits[0].Name != "echo.identity" {
		t.Fatalf("search: %+v, want echo.identity first", r.Hits)
	}
	for range 3 {
		if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"hi"}`)}); err != nil {
			t.Fatal(err)
		}
		if got := s.SearchIndex(ctx); got != ix {
			t.Fatal("a call rebuilt the index")
		}
	}
	add(t, s, "other", "fake")
	ix2 := s.SearchIndex(ctx)
	if ix2 == ix || ix2.Len() != 2 {
		t.Fatalf("after adding a node: the same index %v, %d tools, want a new one of 2", ix2 == ix, ix2.Len())
	}
	// The fake's tool list changes: a new index; the same list again
	// (new pointers, equal tools): the same index.
	fs.nodes["other"].setTools("alpha", "beta")
	ix3 := s.SearchIndex(ctx)
	if ix3 == ix2 || ix3.Len() != 3 {
		t.Fatalf("after a tool list changed: the same index %v, %d tools, want a new one of 3", ix3 == ix2, ix3.Len())
	}
	fs.nodes["other"].setTools("alpha", "beta")
	if s.SearchIndex(ctx) != ix3 {
		t.Error("the same tools listed again rebuilt the index")
	}
	// A filter narrows what is found.
	r := s.SearchTools(ctx, "alpha", &toolsearch.Options{Allow: func(d *toolsearch.Doc) bool { return d.Node == "echo" }})
	if len(r.Hits) != 1 || r.Hits[0].Name != "echo.identity" || !r.Nearest || r.Of != 1 {
		t.Errorf("alpha within echo: %+v (nearest %v, of %d), want echo.identity as the nearest of 1", r.Hits, r.Nearest, r.Of)
	}
}

// Searches, calls and catalogue changes at once: every search answers
// from a whole index (run with -race).
func TestSearchConcurrent(t *testing.T) {
	ctx := context.Background()
	fs := &fakes{}
	s := newSession(t, fs, nil)
	add(t, s, "echo", identity.Kind)
	done := make(chan struct{})
	errs := make(chan error, 3)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if r := s.SearchTools(ctx, "return the text", nil); len(r.Hits) == 0 {
					errs <- fmt.Errorf("a search answered empty: %+v", r)
					return
				}
				_, _ = s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)})
			}
		}()
	}
	for i := range 5 {
		add(t, s, fmt.Sprintf("f%d", i), "fake")
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if ix := s.SearchIndex(ctx); ix.Len() != 6 {
		t.Errorf("the index has %d tools after the adds, want 6", ix.Len())
	}
}
