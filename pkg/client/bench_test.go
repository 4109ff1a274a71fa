package client_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// BenchmarkCall measures one identity call: straight on the session (no
// API), through the API in memory (embedded mode), and through the API
// over a Unix socket. The differences are what the API adds.
func BenchmarkCall(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	newDaemon := func(b *testing.B) *daemon.Daemon {
		d, err := daemon.New(&daemon.Options{Registry: registry(&slowKind{})})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { d.Close(ctx) })
		return d
	}
	b.Run("direct", func(b *testing.B) {
		s := session.New("default", registry(&slowKind{}), nil)
		defer s.Close(ctx)
		if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: "identity"}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	run := func(b *testing.B, c *client.Client) {
		s := c.Session("default")
		if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: "identity"}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Call(ctx, "echo", "identity", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("embedded", func(b *testing.B) {
		emb, err := daemon.StartEmbedded(ctx, &daemon.Options{Registry: registry(&slowKind{})})
		if err != nil {
			b.Fatal(err)
		}
		defer emb.Close(ctx)
		c := client.New(client.Options{Dial: emb.Dial})
		defer c.Close()
		run(b, c)
	})
	b.Run("socket", func(b *testing.B) {
		d := newDaemon(b)
		dir, _ := os.MkdirTemp("", "nb")
		defer os.RemoveAll(dir)
		sock := filepath.Join(dir, "s")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Serve(sctx, ln) }()
		defer func() { cancel(); <-done }()
		c := client.New(client.Options{Socket: sock})
		defer c.Close()
		run(b, c)
	})
}
