package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// BenchmarkRestoreCatalogued20 is a daemon start with 20 catalogued mcp
// nodes (the Go fixture server's 13 tools each) up to a full tool list:
// New, Restore (no server starts: the nodes are lazy) and the session's
// toolset, as tools/list and `nerve tools` answer it.
func BenchmarkRestoreCatalogued20(b *testing.B) {
	const count = 20
	opts, _ := cataloguedState(b, count)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		d, err := New(opts())
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Restore(ctx); err != nil {
			b.Fatal(err)
		}
		s, _ := d.session(ctx, DefaultSession, false)
		if n := len(s.Toolset(ctx).Tools()); n != count*13 {
			b.Fatalf("%d tools listed, want %d", n, count*13)
		}
		b.StopTimer()
		d.Close(ctx)
		b.StartTimer()
	}
}

// BenchmarkCallLazyFirst is the first call to a lazy node after a daemon
// start: it starts the server (the Go fixture, a process and an MCP
// handshake) and calls echo. BenchmarkCallWarm is a call to it once it runs.
func BenchmarkCallLazyFirst(b *testing.B) {
	opts, _ := cataloguedState(b, 1)
	ctx := context.Background()
	args := []byte(`{"text":"hi"}`)
	for b.Loop() {
		b.StopTimer()
		d, err := New(opts())
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Restore(ctx); err != nil {
			b.Fatal(err)
		}
		s, _ := d.session(ctx, DefaultSession, false)
		b.StartTimer()
		if _, err := s.Call(ctx, "m00", &node.CallRequest{Tool: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		d.Close(ctx)
		b.StartTimer()
	}
}

func BenchmarkCallWarm(b *testing.B) {
	opts, _ := cataloguedState(b, 1)
	ctx := context.Background()
	d, err := New(opts())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close(ctx)
	if err := d.Restore(ctx); err != nil {
		b.Fatal(err)
	}
	s, _ := d.session(ctx, DefaultSession, false)
	args := []byte(`{"text":"hi"}`)
	if _, err := s.Call(ctx, "m00", &node.CallRequest{Tool: "echo", Arguments: args}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Call(ctx, "m00", &node.CallRequest{Tool: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// cataloguedState writes a state folder with count lazy mcp nodes, each
// with a catalogue, and returns the daemon options for it.
func cataloguedState(b *testing.B, count int) (func() *Options, string) {
	b.Helper()
	server := testutil.BuildBinary(b, "./fixtures/mcpserver")
	dir := b.TempDir()
	reg := &session.Registry{}
	reg.Register(mcpnode.Kind, mcpnode.Factory(nil))
	opts := func() *Options {
		return &Options{Registry: reg, Persist: true, Paths: paths.Under(dir, filepath.Join(dir, "run"))}
	}
	ctx := context.Background()

	// One real run writes a catalogue; the other 19 nodes get a copy.
	d, err := New(opts())
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Restore(ctx); err != nil {
		b.Fatal(err)
	}
	s, _ := d.session(ctx, DefaultSession, true)
	spec := node.Spec{ID: "m00", Kind: mcpnode.Kind, Command: []string{server}}
	if _, err := s.Add(ctx, spec); err != nil {
		b.Fatal(err)
	}
	d.Close(ctx)
	cat, err := os.ReadFile(filepath.Join(dir, "sessions", DefaultSession, "nodes", "m00", "catalog.json"))
	if err != nil {
		b.Fatal(err)
	}
	var specs []node.Spec
	for i := range count {
		id := fmt.Sprintf("m%02d", i)
		specs = append(specs, node.Spec{ID: id, Kind: mcpnode.Kind, Command: []string{server}})
		os.MkdirAll(filepath.Join(dir, "sessions", DefaultSession, "nodes", id), 0o700)
		os.WriteFile(filepath.Join(dir, "sessions", DefaultSession, "nodes", id, "catalog.json"), cat, 0o600)
	}
	if err := saveSpecs(filepath.Join(dir, "sessions", DefaultSession+".json"), DefaultSession, specs); err != nil {
		b.Fatal(err)
	}
	return opts, dir
}
