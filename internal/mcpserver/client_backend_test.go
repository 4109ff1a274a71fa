package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// embedded returns a client session of an in-memory daemon.
func embedded(t testing.TB) *client.Session {
	t.Helper()
	emb, err := daemon.StartEmbedded(context.Background(), &daemon.Options{Registry: all.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(client.Options{Dial: emb.Dial})
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		emb.Close(ctx)
	})
	return c.Session("default")
}

func serveClient(t *testing.T, cs *client.Session, opts *mcpserver.Options, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	srv := mcpserver.New(mcpserver.NewClientBackend(cs), opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	<-srv.Ready()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, copts)
	sess, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestClientBackend is `nerve mcp serve` without the process: the server
// reaches the session through the daemon's API.
func TestClientBackend(t *testing.T) {
	sess := embedded(t)
	if _, err := sess.Add(t.Context(), node.Spec{ID: "echo", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cs := serveClient(t, sess, nil, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if got := names(t, cs); !slices.Equal(got, []string{"echo.identity"}) {
		t.Fatalf("tools = %v", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "via daemon"}})
	if err != nil || text(res) != "via daemon" {
		t.Fatalf("call: %v %v", err, res)
	}
	fx := testutil.BuildBinary(t, "./fixtures/mcpserver")
	if _, err := sess.Add(t.Context(), node.Spec{ID: "fx", Kind: "mcp", Command: []string{fx}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(15 * time.Second)
	for !slices.Contains(names(t, cs), "fx.echo") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("fx.echo never listed: %v", names(t, cs))
		}
	}
	// The server adds a node's resources just after its tools: wait for
	// them as a client told of the change would.
	var lr *mcp.ListResourcesResult
	testutil.WaitFor(t, 15*time.Second, func() bool {
		lr, err = cs.ListResources(t.Context(), nil)
		return err == nil && len(lr.Resources) > 0
	}, "fx's resources to be listed through the daemon")
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: lr.Resources[0].URI})
	if err != nil || len(rr.Contents) == 0 {
		t.Fatalf("read via daemon: %v %v", err, rr)
	}
}

// TestClientBackendNodeMode: sampling and elicitation of the server behind
// node fx cross the daemon's attach stream to the MCP client.
func TestClientBackendNodeMode(t *testing.T) {
	sess := embedded(t)
	fx := testutil.BuildBinary(t, "./fixtures/mcpserver")
	if _, err := sess.Add(t.Context(), node.Spec{ID: "fx", Kind: "mcp", Command: []string{fx}}); err != nil {
		t.Fatal(err)
	}
	cs := serveClient(t, sess, &mcpserver.Options{Node: "fx"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "yes"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "blue"}}, nil
		},
	})
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"sample", map[string]any{"prompt": "?"}, "m said: yes"},
		{"elicit", map[string]any{"message": "?"}, "user answered: blue"},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s: %v %q, want %q", tc.tool, err, text(res), tc.want)
		}
	}
}

// TestClientBackendCancelledCallClosesForm: when the call that made the
// server ask is cancelled, the MCP client's form is cancelled too instead of
// staying open for nobody.
func TestClientBackendCancelledCallClosesForm(t *testing.T) {
	sess := embedded(t)
	fx := testutil.BuildBinary(t, "./fixtures/mcpserver")
	if _, err := sess.Add(t.Context(), node.Spec{ID: "fx", Kind: "mcp", Command: []string{fx}}); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	cs := serveClient(t, sess, &mcpserver.Options{Node: "fx"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		},
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "?"}})
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never asked")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's form stayed open after the call that caused it was cancelled")
	}
	<-done
}
