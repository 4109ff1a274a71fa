package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// connectModern connects an in-memory Go SDK client speaking 2026-07-28
// (server/discover, _meta on every request, no session) to srv.
func connectModern(t testing.TB, srv *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "modern-client", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: modernProtocol})
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != modernProtocol {
		t.Fatalf("negotiated %s, want %s", v, modernProtocol)
	}
	return cs
}

// TestModernElicitationAcrossEras: an MCP server behind a node asks for
// an elicitation the 2025-11-25 way, in the middle of its call; a client
// of 2026-07-28 gets it as input_required, and its retry's answer reaches
// the server, whose result comes back.
func TestModernElicitationAcrossEras(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	srv := serve(t, NewSessionBackend(s), &Options{Node: "fx"})

	t.Run("by hand", func(t *testing.T) {
		cs := connectModern(t, srv, &mcp.ClientOptions{
			Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		})
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "what?"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("first round: %s, want input_required with one question and a requestState", mustJSON(res))
		}
		var key string
		for k, r := range res.InputRequests {
			key = k
			if p, ok := r.(*mcp.ElicitParams); !ok || p.Message != "what?" {
				t.Fatalf("question %s: %s, want the server's elicitation", k, mustJSON(r))
			}
		}

		// An altered requestState names no call.
		_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "what?"},
			InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "x"}}},
			RequestState:   res.RequestState + "-TAMPERED"})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "names no call") {
			t.Errorf("tampered requestState: %v, want -32602 naming no call", err)
		}

		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "what?"},
			InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42"}}},
			RequestState:   res.RequestState})
		if err != nil {
			t.Fatal(err)
		}
		if res.NeedsInput() || !strings.Contains(resultText(res), "user answered: 42") {
			t.Errorf("second round: %s, want the server's result with the answer", mustJSON(res))
		}
		if n := srv.pendingCount(); n != 0 {
			t.Errorf("%d calls still held after the result", n)
		}
	})

	t.Run("by the SDK", func(t *testing.T) {
		// The Go SDK's client answers input_required with its handlers
		// and retries by itself.
		cs := connectModern(t, srv, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes to " + req.Params.Message}}, nil
			},
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				q := req.Params.Messages[0].Content.(*mcp.TextContent).Text
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + q}}, nil
			},
		})
		for _, tc := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"elicit", map[string]any{"message": "ok?"}, "user answered: yes to ok?"},
			{"sample", map[string]any{"prompt": "life"}, "m said: sampled life"},
			{"echo", map[string]any{"text": "plain"}, "plain"},
		} {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("%s: %v", tc.tool, err)
			}
			if got := resultText(res); !strings.Contains(got, tc.want) {
				t.Errorf("%s answered %s, want %q", tc.tool, mustJSON(res), tc.want)
			}
		}
	})

	t.Run("without the capability", func(t *testing.T) {
		// A client that declared no elicitation is not asked: the server
		// behind is declined, as for a client of 2025-11-25.
		cs := connectModern(t, srv, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "what?"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.NeedsInput() || !strings.Contains(resultText(res), "decline") {
			t.Errorf("answer: %s, want the server's result for a declined elicitation", mustJSON(res))
		}
	})
}

// TestModernGraphAsk: a graph's ask: gate, called by a client of
// 2026-07-28 through the session's server, reaches it as input_required;
// the answer of its retry is the step's, and the run goes on with it. A
// retry that gives no answer is asked again.
func TestModernGraphAsk(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "e", Kind: "identity"})
	src, _ := json.Marshal(map[string]string{"source": "inputs: {f: string}\nsteps:\n  ok: {ask: \"ship ${inputs.f}?\"}\n  go: {call: e.identity, args: {text: \"shipped: ${steps.ok.text}\"}}\n"})
	addNode(t, s, node.Spec{ID: "release", Kind: "graph", Options: src})
	srv := serve(t, NewSessionBackend(s), nil)
	cs := connectModern(t, srv, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	call := func(answers mcp.InputResponseMap, state string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "release.run", Arguments: map[string]any{"f": "v2"}, InputResponses: answers, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call(nil, "")
	if !res.NeedsInput() || len(res.InputRequests) != 1 {
		t.Fatalf("first round: %s, want the gate's question", mustJSON(res))
	}
	var key string
	for k, q := range res.InputRequests {
		key = k
		if p, ok := q.(*mcp.ElicitParams); !ok || p.Message != "ship v2?" {
			t.Fatalf("question %s, want the gate's", mustJSON(q))
		}
	}
	// A retry that answers something else: the question stands.
	again := call(mcp.InputResponseMap{"other": &mcp.ElicitResult{Action: "accept"}}, res.RequestState)
	if !again.NeedsInput() || again.InputRequests[key] == nil || again.RequestState == res.RequestState {
		t.Fatalf("a retry without the answer: %s, want the same question under a new requestState", mustJSON(again))
	}
	// The first requestState is spent.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "release.run", Arguments: map[string]any{"f": "v2"}, RequestState: res.RequestState}); err == nil {
		t.Error("an old requestState was taken")
	}
	done := call(mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}}, again.RequestState)
	if done.NeedsInput() || !strings.Contains(resultText(done), "shipped: yes") {
		t.Errorf("last round: %s, want the run's output with the answer", mustJSON(done))
	}
}
