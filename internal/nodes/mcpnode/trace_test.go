package mcpnode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil/spantest"
	"github.com/nerve-dev/nerve/pkg/node"
)

// metaRecorder is a Go SDK server whose tool meta records the _meta and
// the trace headers of each call it gets.
type metaRecorder struct {
	mu     sync.Mutex
	meta   []map[string]any
	header []string
}

func (m *metaRecorder) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "meta"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.meta = append(m.meta, req.Params.Meta)
		if req.Extra != nil && req.Extra.Header != nil {
			m.header = append(m.header, req.Extra.Header.Get("Traceparent"))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	return s
}

// TestCallCarriesTraceContext: with tracing on, a call to a server is a
// client span (tools/call TOOL), and the server is sent its context: in
// the request's _meta as traceparent (SEP-414) on every transport, and as
// the traceparent header of the HTTP request over streamable HTTP.
func TestCallCarriesTraceContext(t *testing.T) {
	for _, transport := range []string{"http", "memory"} {
		t.Run(transport, func(t *testing.T) {
			rec := spantest.Record(t)
			m := &metaRecorder{}
			cfg := defaultConfig()
			opts := `{"transport":"http","url":"http://in-memory.invalid/mcp"}`
			if transport == "http" {
				srv := m.server()
				hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
				t.Cleanup(hs.Close)
				b, _ := json.Marshal(map[string]any{"transport": "http", "url": hs.URL})
				opts = string(b)
			} else {
				cfg.transport = func() mcp.Transport {
					st, ct := mcp.NewInMemoryTransports()
					ss, err := m.server().Connect(context.Background(), st, nil)
					if err != nil {
						t.Fatalf("connecting the in-memory server: %v", err)
					}
					t.Cleanup(func() { ss.Close() })
					return ct
				}
			}
			n, err := newNode(node.Spec{ID: "m", Kind: Kind, Options: json.RawMessage(opts)}, node.Env{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			mustStart(t, n)
			t.Cleanup(func() { n.Stop(context.Background()) })
			if _, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "meta"}); err != nil {
				t.Fatal(err)
			}
			spans := rec.Named("tools/call meta")
			if len(spans) != 1 {
				t.Fatalf("client spans: %v", rec.Ended())
			}
			sc := spans[0].SpanContext()
			want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
			m.mu.Lock()
			defer m.mu.Unlock()
			if len(m.meta) != 1 || m.meta[0]["traceparent"] != want {
				t.Errorf("the server got _meta %v, want traceparent %s", m.meta, want)
			}
			if transport == "http" && (len(m.header) != 1 || m.header[0] != want) {
				t.Errorf("the server got the header traceparent %q, want %s", m.header, want)
			}
			if got := spantest.Attr(spans[0], "nerve.node"); got != "m" {
				t.Errorf("nerve.node = %q", got)
			}
		})
	}
}
