package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// TestNodeMode serves one mcp node alone: its tools unprefixed, its
// prompts under their own names, and its sampling and elicitation
// requests answered by the MCP client.
func TestNodeMode(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	srv := serve(t, NewSessionBackend(s), &Options{Node: "fx"})
	cs, _ := connect(t, srv, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			q := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "answer to " + q}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42 for " + req.Params.Message}}, nil
		},
	})
	names := toolNames(t, cs)
	fx, _ := s.Node("fx")
	tools, _ := fx.ListTools(t.Context())
	var want []string
	for _, tool := range tools {
		want = append(want, tool.Name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("node mode tools = %v, want the node's own %v", names, want)
	}
	if init := cs.InitializeResult(); init.Capabilities.Prompts == nil || init.Capabilities.Resources == nil {
		t.Errorf("capabilities %s: want the prompts and resources of the server behind", mustJSON(init.Capabilities))
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"sample", map[string]any{"prompt": "life"}, "test-model said: answer to life"},
		{"elicit", map[string]any{"message": "what?"}, "user answered: 42 for what?"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); !strings.Contains(got, tc.want) {
				t.Errorf("%s answered %s, want %q", tc.tool, mustJSON(res), tc.want)
			}
		})
	}

	lp, err := cs.ListPrompts(t.Context(), nil)
	if err != nil || len(lp.Prompts) == 0 || strings.Contains(lp.Prompts[0].Name, ".") {
		t.Errorf("prompts in node mode: %v %s", err, mustJSON(lp))
	}
}

// TestNodeModeNotMCP serves a bash node alone: its one tool, no
// resources or prompts advertised.
func TestNodeModeNotMCP(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	cs, _ := connect(t, serve(t, NewSessionBackend(s), &Options{Node: "echo"}), nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"identity"}) {
		t.Errorf("tools = %v, want [identity]", got)
	}
	if caps := cs.InitializeResult().Capabilities; caps.Prompts != nil || caps.Resources != nil {
		t.Errorf("capabilities %s: an identity node has no prompts or resources", mustJSON(caps))
	}
}

// TestNodeModeCancelledCallClosesForm: when the call that made the server
// ask is cancelled, the MCP client's form is cancelled too instead of
// staying open for nobody.
func TestNodeModeCancelledCallClosesForm(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	cs, _ := connect(t, serve(t, NewSessionBackend(s), &Options{Node: "fx"}), &mcp.ClientOptions{
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
