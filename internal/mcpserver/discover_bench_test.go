package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// manyServers is a session of twenty real server-everything nodes
// (ev01…ev20) and one server-filesystem node (fs), started four at a
// time: twenty-one Node.js servers starting at once on a loaded 2-core
// machine miss the 30 s initialize wait.
func manyServers(b *testing.B) *session.Session {
	s := session.New("bench", all.Registry(nil), &session.Options{Dir: b.TempDir()})
	b.Cleanup(func() { s.Close(context.Background()) })
	specs := []node.Spec{{ID: "fs", Kind: "mcp", Command: npmfix.ServerFilesystem(b, b.TempDir())}}
	for i := 1; i <= 20; i++ {
		specs = append(specs, node.Spec{ID: fmt.Sprintf("ev%02d", i), Kind: "mcp", Command: npmfix.ServerEverything(b)})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	slots := make(chan struct{}, 4)
	for i, sp := range specs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			_, errs[i] = s.Add(b.Context(), sp)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("adding %s: %v", specs[i].ID, err)
		}
	}
	return s
}

// serveWith connects an in-memory client to a server on s with opts.
func serveWith(b *testing.B, s *session.Session, opts *mcpserver.Options) *mcp.ClientSession {
	srv := mcpserver.New(mcpserver.NewSessionBackend(s), opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	<-srv.Ready()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkToolsListSize measures what tools/list costs a model's context
// with twenty server-everything nodes and server-filesystem: every tool,
// and --discover (issue 19, item 4). Metrics: bytes of the tools/list
// results (every page, as JSON), tokens estimated at 4 bytes each, and
// the tools listed; for discover also one search_tools round trip.
func BenchmarkToolsListSize(b *testing.B) {
	s := manyServers(b)
	for _, mode := range []struct {
		name string
		opts *mcpserver.Options
	}{
		{"all", nil},
		{"discover", &mcpserver.Options{Discover: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			cs := serveWith(b, s, mode.opts)
			var size, tools int
			for b.Loop() {
				size, tools = 0, 0
				cursor := ""
				for {
					res, err := cs.ListTools(b.Context(), &mcp.ListToolsParams{Cursor: cursor})
					if err != nil {
						b.Fatal(err)
					}
					data, _ := json.Marshal(res)
					size += len(data)
					tools += len(res.Tools)
					if cursor = res.NextCursor; cursor == "" {
						break
					}
				}
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/4, "tokens")
			b.ReportMetric(float64(tools), "tools")
		})
	}
	b.Run("search_tools", func(b *testing.B) {
		cs := serveWith(b, s, &mcpserver.Options{Discover: true})
		p := &mcp.CallToolParams{Name: mcpserver.ToolSearch, Arguments: map[string]any{"query": "read a text file"}}
		var size int
		for b.Loop() {
			res, err := cs.CallTool(b.Context(), p)
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			data, _ := json.Marshal(res)
			size = len(data)
		}
		b.ReportMetric(float64(size), "result-bytes")
	})
}
