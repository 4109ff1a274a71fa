package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// newSession returns a session with every built-in kind, closed at the
// end of the test.
func newSession(t testing.TB) *session.Session {
	t.Helper()
	s := session.New("test", all.Registry(nil), &session.Options{Dir: t.TempDir()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s
}

func addNode(t testing.TB, s *session.Session, spec node.Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Add(ctx, spec); err != nil {
		t.Fatalf("adding node %q: %v", spec.ID, err)
	}
}

// fixtureNode is node id running fixtures/mcpserver on stdio.
func fixtureNode(t testing.TB, id string) node.Spec {
	t.Helper()
	return node.Spec{ID: id, Kind: "mcp", Command: []string{testutil.BuildBinary(t, "./fixtures/mcpserver")}}
}

// serve runs a Server on b until the end of the test and returns it once
// its first sync is done.
func serve(t testing.TB, b Backend, opts *Options) *Server {
	t.Helper()
	srv := New(b, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-srv.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	return srv
}

// events is what a test client was told.
type events struct {
	toolsChanged chan struct{}
	progress     chan *mcp.ProgressNotificationParams
	logs         chan *mcp.LoggingMessageParams
	updated      chan string
}

// connect connects an in-memory client to srv with opts (nil: one that
// records notifications in the returned events).
func connect(t testing.TB, srv *Server, opts *mcp.ClientOptions) (*mcp.ClientSession, *events) {
	t.Helper()
	ev := &events{
		toolsChanged: make(chan struct{}, 64),
		progress:     make(chan *mcp.ProgressNotificationParams, 64),
		logs:         make(chan *mcp.LoggingMessageParams, 64),
		updated:      make(chan string, 64),
	}
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { ev.toolsChanged <- struct{}{} }
	opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { ev.progress <- r.Params }
	opts.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) { ev.logs <- r.Params }
	opts.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { ev.updated <- r.Params.URI }
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ev
}

func toolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// waitTools waits for a list_changed notice after which the tool list
// satisfies ok.
func waitTools(t testing.TB, cs *mcp.ClientSession, ev *events, what string, ok func([]string) bool) []string {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case <-ev.toolsChanged:
			if names := toolNames(t, cs); ok(names) {
				return names
			}
		case <-deadline:
			t.Fatalf("no tools/list_changed leading to %s; tools now: %v", what, toolNames(t, cs))
		}
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
