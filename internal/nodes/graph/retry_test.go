package graph

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// failing returns a tool that always fails and the times it was called,
// measured from start.
func failing(start time.Time) (func(context.Context, map[string]any) (*mcp.CallToolResult, error), func() []time.Duration) {
	var mu sync.Mutex
	var at []time.Duration
	tool := func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		mu.Lock()
		at = append(at, time.Since(start))
		mu.Unlock()
		return nil, errors.New("connection lost")
	}
	return tool, func() []time.Duration { mu.Lock(); defer mu.Unlock(); return slices.Clone(at) }
}

// TestRetryBackoff: a step's tries are a backoff apart, doubling after
// each (uncapped), on the clock — virtual in the bubble.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		tool, calls := failing(time.Now())
		f.tools["e.down"] = tool
		d := mustParse(t, `
steps:
  down: {call: e.down, retry: {attempts: 5, backoff: 1s}}
`)
		if _, err := Run(t.Context(), d, nil, RunOptions{Caller: f}); err == nil {
			t.Fatal("a step that always fails made the run succeed")
		}
		s := time.Second
		if got, want := calls(), []time.Duration{0, s, 3 * s, 7 * s, 15 * s}; !slices.Equal(got, want) {
			t.Errorf("tries at %v, want %v", got, want)
		}
	})
}

// TestRetryBackoffCancelled: cancelling a run while a step waits to
// retry ends the run then, without another try.
func TestRetryBackoffCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		start := time.Now()
		tool, calls := failing(start)
		f.tools["e.down"] = tool
		d := mustParse(t, `
steps:
  down: {call: e.down, retry: {attempts: 5, backoff: 1s}}
`)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(2*time.Second, cancel) // during the wait from 1s to 3s
		_, err := Run(ctx, d, nil, RunOptions{Caller: f})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("run = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("the run ended after %v, want 2s (the cancel)", got)
		}
		if got := calls(); len(got) != 2 {
			t.Errorf("tries at %v, want two (at 0 and 1s)", got)
		}
	})
}
