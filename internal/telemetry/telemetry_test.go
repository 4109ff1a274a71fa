package telemetry_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/internal/testutil/spantest"
)

// TestOffCostsNothing: with no tracer provider installed, the hops' spans
// are no span at all: the context comes back as it was and nothing is
// allocated (the global no-op tracer would allocate a span and a context
// per call).
func TestOffCostsNothing(t *testing.T) {
	if telemetry.On() {
		t.Fatal("tracing is on without a provider")
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, sp := telemetry.SessionCall(ctx, "s", "n", "t", "cli")
		if c != ctx {
			t.Fatal("the context changed")
		}
		c2, sp2 := telemetry.MCPClient(c, "n", "t", "")
		_ = telemetry.InjectMeta(c2, nil)
		sp2.EndCall(false, nil)
		sp.EndCall(false, nil)
		c3, sp3 := telemetry.GraphStep(ctx, "a")
		_ = c3
		sp3.End(nil)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call with tracing off, want 0", allocs)
	}
}

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestPropagation: the W3C trace context goes out in an MCP request's
// _meta (SEP-414) and in HTTP headers, and is read back from both and from
// TRACEPARENT; a command given TRACEPARENT passes it on with tracing off.
func TestPropagation(t *testing.T) {
	ctx := telemetry.FromEnviron(context.Background(), func(k string) string {
		return map[string]string{"TRACEPARENT": parent, "TRACESTATE": "rojo=1"}[k]
	})
	h := http.Header{}
	telemetry.InjectHeader(ctx, h)
	if h.Get("Traceparent") != parent || h.Get("Tracestate") != "rojo=1" {
		t.Errorf("headers from TRACEPARENT with tracing off: %v", h)
	}

	rec := spantest.Record(t)
	ctx, sp := telemetry.MCPClient(ctx, "fs", "read_text_file", "http://127.0.0.1:9/mcp")
	meta := telemetry.InjectMeta(ctx, map[string]any{"tracestate": "stale", "nerve.dev/chain": []string{"x"}})
	sc := trace.SpanContextFromContext(ctx)
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if meta["traceparent"] != want || meta["nerve.dev/chain"] == nil {
		t.Errorf("_meta = %v, want traceparent %s beside the other keys", meta, want)
	}
	back := trace.SpanContextFromContext(telemetry.FromMeta(context.Background(), meta))
	if !back.IsRemote() || back.SpanID() != sc.SpanID() || back.TraceID() != sc.TraceID() {
		t.Errorf("read back from _meta: %v, want %v", back, sc)
	}
	h = http.Header{}
	telemetry.InjectHeader(ctx, h)
	if got := trace.SpanContextFromContext(telemetry.FromHeader(context.Background(), h)); got.SpanID() != sc.SpanID() {
		t.Errorf("read back from headers: %v, want %v", got, sc)
	}
	sp.EndCall(false, nil)
	ended := rec.Named("tools/call read_text_file")
	if len(ended) != 1 || ended[0].Parent().SpanID().String() != "00f067aa0ba902b7" || ended[0].SpanKind() != trace.SpanKindClient {
		t.Fatalf("the client span: %v", ended)
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "read_text_file", "server.address": "127.0.0.1", "server.port": "9", "network.transport": "tcp"} {
		if got := spantest.Attr(ended[0], k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestServerMiddleware: an MCP server with telemetry.ServerMiddleware
// continues the trace its client put in _meta: the tool's work is under
// a server span whose parent is the client's span.
func TestServerMiddleware(t *testing.T) {
	rec := spantest.Record(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddReceivingMiddleware(telemetry.ServerMiddleware)
	var inTool trace.SpanContext
	mcp.AddTool(srv, &mcp.Tool{Name: "look"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		inTool = trace.SpanContextFromContext(ctx)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "look", Meta: mcp.Meta{"traceparent": parent}}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Named("tools/call look")
	if len(spans) != 1 {
		t.Fatalf("server spans: %v", rec.Ended())
	}
	s := spans[0]
	if s.SpanKind() != trace.SpanKindServer || s.Parent().SpanID().String() != "00f067aa0ba902b7" || s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span %v, parent %v", s.SpanContext(), s.Parent())
	}
	if inTool.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("the tool ran under %v, not the server span", inTool)
	}
	if spantest.Attr(s, "nerve.call.outcome") != telemetry.OutcomeToolError || spantest.Attr(s, "network.transport") != "pipe" {
		t.Errorf("attributes %v", s.Attributes())
	}
}
