package mcpnode

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// TestResultOverLimitFailsOnlyTheCall: a result over the size limit (a
// 20 MB line) or nested deeper than MaxDepth fails its call with a message
// that names the limit; the node stays READY and answers the next call
// (issue 22, item 3). Before, both ended the connection: the node went
// ERROR, the deep one with "the server exited with code 0 unexpectedly".
func TestResultOverLimitFailsOnlyTheCall(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		tool  string
		want  string
	}{
		{"20 MB result", nil, "huge", `tool "huge" on node "big": the result was 20.0 MB, over nerve's limit of 16 MB for one message; ask the tool for less`},
		{"20 MB result, id after it", []string{"--id-last"}, "huge", "the result was 20.0 MB, over nerve's limit of 16 MB"},
		{"structuredContent 1,000 deep", nil, "deep", `tool "deep" on node "big": the result nests 1002 levels deep, over nerve's limit of 1000 levels for one message; ask the tool for a flatter answer`},
		{"structuredContent 1,000 deep, id after it", []string{"--id-last"}, "deep", "over nerve's limit of 1000 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := faultSession(t, faultConfig())
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			n, err := s.Add(ctx, stdioSpec("big", badmcp(t, append([]string{"--mode", "big-results"}, tt.flags...)...)))
			if err != nil {
				t.Fatal(err)
			}
			pid := serverPid(n)
			for i := range 2 { // twice: the first refusal leaves nothing behind
				_, err = s.Call(ctx, "big", &node.CallRequest{Tool: tt.tool})
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("call %d to %s: %v\nwant %q", i+1, tt.tool, err, tt.want)
				}
				if st := n.State(); st != node.Ready {
					t.Fatalf("node is %s after the refused result (%s), want READY", st, n.Info().Error)
				}
				if got, err := echo(ctx, s, "big", "next"); err != nil || got != "next" {
					t.Fatalf("echo after the refused result = %q, %v", got, err)
				}
			}
			if serverPid(n) != pid {
				t.Errorf("the server was restarted (pid %d, was %d)", serverPid(n), pid)
			}
		})
	}
}

// TestServerRequestOverLimitIsAnswered: a request of a stdio server's
// nested over the limit is answered with an error naming the limit (the
// server does not wait for ever), and the node stays READY.
func TestServerRequestOverLimitIsAnswered(t *testing.T) {
	s := faultSession(t, faultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := s.Add(ctx, stdioSpec("big", badmcp(t, "--mode", "big-results")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(ctx, "big", &node.CallRequest{Tool: "ask-deep"})
	if err != nil {
		t.Fatal(err)
	}
	want := "error -32050: the server's message nests 1001 levels deep, over nerve's limit of 1000 levels for one message"
	if got := text(t, res); !strings.Contains(got, want) {
		t.Errorf("the server was told %q, want %q", got, want)
	}
	if st := n.State(); st != node.Ready {
		t.Errorf("node is %s (%s), want READY", st, n.Info().Error)
	}
}

// TestGuard feeds a guard messages and checks what it hands on, and
// what it refuses.
func TestGuard(t *testing.T) {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	big := `{"jsonrpc":"2.0","result":{"text":"` + strings.Repeat(`x\"`, 1000) + `"},"id":7}`
	tests := []struct {
		name    string
		sse     bool
		in      string
		want    string
		refused []string // reasons
	}{
		{"passes messages and garbage", false, "{\"id\":1}\nnot json\n\n{\"a\":[1,{}]}", "{\"id\":1}\nnot json\n\n{\"a\":[1,{}]}", nil},
		{"too big, id last", false, big + "\n{\"id\":2}\n", `{"jsonrpc":"2.0","id":7,"error":{"code":-32050,"message":"the result was 3045 bytes, over nerve's limit of 3000 bytes for one message; ask the tool for less"}}` + "\n{\"id\":2}\n", []string{"the result was"}},
		{"too deep, string id", false, `{"id":"a,}b","result":` + deep + "}\n", `{"jsonrpc":"2.0","id":"a,}b","error":{"code":-32050,"message":"the result nests 1002 levels deep, over nerve's limit of 1000 levels for one message; ask the tool for a flatter answer"}}` + "\n", []string{"1002 levels"}},
		{"too deep, no id: dropped", false, `{"method":"notifications/message","params":` + deep + "}\n{\"id\":3}\n", "{\"id\":3}\n", []string{"the server's message nests"}},
		{"nested id is not the id", false, `{"result":{"id":5,"x":` + deep + `}}` + "\n", "", []string{"levels"}},
		{"sse", true, "event: message\ndata: " + big + "\n\nevent: message\ndata: {\"id\":2}\n\n", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32050,\"message\":\"the result was 3045 bytes, over nerve's limit of 3000 bytes for one message; ask the tool for less\"}}\n\nevent: message\ndata: {\"id\":2}\n\n", []string{"the result was"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var refused []string
			// One byte at a time: every state survives a read boundary.
			g := newGuard(iotest.OneByteReader(strings.NewReader(tt.in)), 3000, tt.sse, func(o overLimit) []byte {
				refused = append(refused, o.reason())
				return o.errorResponse()
			}, nil, nil)
			out, err := io.ReadAll(g)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("handed on\n%q\nwant\n%q", out, tt.want)
			}
			if len(refused) != len(tt.refused) {
				t.Fatalf("refused %q, want %d like %q", refused, len(tt.refused), tt.refused)
			}
			for i, r := range tt.refused {
				if !strings.Contains(refused[i], r) {
					t.Errorf("refusal %d = %q, want %q in it", i, refused[i], r)
				}
			}
			for line := range strings.SplitSeq(string(out), "\n") {
				if line = strings.TrimPrefix(line, "data: "); strings.Contains(line, "-32050") && !json.Valid([]byte(line)) {
					t.Errorf("made-up answer is not JSON: %s", line)
				}
			}
		})
	}
}

// bigServer is an MCP server (the Go SDK's) whose tool big answers mb
// megabytes of text, or structuredContent nested depth deep.
func bigServer() *mcp.Server {
	s := newTestServer()
	s.AddTool(&mcp.Tool{Name: "big", Description: "answers too much", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ MB, Depth int }
			json.Unmarshal(req.Params.Arguments, &in)
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.MB<<20)}}}
			if in.Depth > 0 {
				res.StructuredContent = json.RawMessage(strings.Repeat(`{"a":`, in.Depth-1) + "{}" + strings.Repeat("}", in.Depth-1))
			}
			return res, nil
		})
	return s
}

// TestRemoteResultOverLimitFailsOnlyTheCall: as over stdio, a result over
// the limits from an http or sse server fails its call and the node stays
// READY (issue 22, item 3).
func TestRemoteResultOverLimitFailsOnlyTheCall(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			srv := bigServer()
			var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
			if transport == "sse" {
				h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
			}
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)
			opts, _ := json.Marshal(map[string]any{"transport": transport, "url": hs.URL})
			n, err := newNode(node.Spec{ID: "big", Kind: Kind, Options: opts}, node.Env{}, faultConfig())
			if err != nil {
				t.Fatal(err)
			}
			mustStart(t, n)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, tc := range []struct{ args, want string }{
				{`{"MB":20}`, `tool "big" on node "big": the result was 20.0 MB, over nerve's limit of 16 MB for one message; ask the tool for less`},
				{`{"Depth":1000}`, `tool "big" on node "big": the result nests 1002 levels deep, over nerve's limit of 1000 levels`},
			} {
				_, err := n.CallTool(ctx, &node.CallRequest{Tool: "big", Arguments: json.RawMessage(tc.args)})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("big %s: %v\nwant %q", tc.args, err, tc.want)
				}
				if st := n.State(); st != node.Ready {
					t.Fatalf("node is %s after big %s (%s), want READY", st, tc.args, n.Info().Error)
				}
				res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"next"}`)})
				if err != nil || text(t, res) != "next" {
					t.Fatalf("echo after big %s: %v, %v", tc.args, res, err)
				}
			}
		})
	}
}
