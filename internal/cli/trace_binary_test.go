//go:build unix

package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/jaeger"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// TestBinaryTracesInJaeger: nerve pointed at a real Jaeger with `nerve
// env set` (the command line and the daemon both read nerve's env file)
// sends one trace per call with every hop nerve owns, each the child of the
// one before it (issue 31, item 3):
//   - `nerve call @fs read_text_file …` against server-filesystem;
//   - a call to a Go server that answers with the _meta it got: the
//     traceparent there is the mcp node's client span, as Jaeger has it;
//   - a three-step graph: the run is the parent of its steps, each step of
//     its call;
//   - an MCP client that sends its own traceparent in _meta: nerve's spans
//     join the client's trace under the client's span.
func TestBinaryTracesInJaeger(t *testing.T) {
	j := jaeger.Start(t)
	n := newRealNerve(t)
	service := "nerve-test-" + randomHex(4)
	// OTEL_BSP_SCHEDULE_DELAY: the daemon sends its spans within 100 ms,
	// not the SDK's default 5 s.
	n.Must("env", "set", "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLP(), "OTEL_SERVICE_NAME="+service, "OTEL_BSP_SCHEDULE_DELAY=100")

	dir := t.TempDir()
	file := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(file, []byte("hello, jaeger\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.Must(append([]string{"node", "add", "mcp", "fs", "--"}, npmfix.ServerFilesystem(t, dir)...)...)
	n.Must("node", "add", "mcp", "meta", "--", testutil.BuildBinary(t, "./fixtures/tracemcp"))
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "g", "--from", writeFile(t, filepath.Join(n.home, "g.yaml"),
		"steps:\n  a: {call: echo.identity, args: {text: one}}\n  b: {call: echo.identity, args: {text: two}, after: [a]}\n  c: {call: echo.identity, args: {text: three}, after: [a]}\n"))

	t.Run("call", func(t *testing.T) {
		if out := n.Must("call", "@fs", "read_text_file", "path="+file); !strings.Contains(out, "hello, jaeger") {
			t.Fatalf("nerve call printed %q", out)
		}
		tr := j.WaitTrace(t, service, func(tr *jaeger.Trace) bool {
			return len(tr.Named("nerve call")) == 1 && len(tr.Named("tools/call read_text_file")) == 1
		})
		want := `nerve call [cli]
  POST /v1/sessions/{session}/nodes/{node}/call [daemon]
    execute_tool fs.read_text_file [daemon]
      tools/call read_text_file [daemon]
`
		if got := tr.Tree(); got != want {
			t.Errorf("the trace of nerve call, as Jaeger has it:\n%s\nwant\n%s", got, want)
		}
		t.Logf("Jaeger's trace %s:\n%s", tr.TraceID, tr.Tree())
		s := tr.Named("execute_tool fs.read_text_file")[0]
		for k, v := range map[string]string{"nerve.node": "fs", "gen_ai.tool.name": "read_text_file", "nerve.caller": "cli", "nerve.call.outcome": "ok", "nerve.session": "default"} {
			if got := s.Tag(k); got != v {
				t.Errorf("execute_tool's %s = %q, want %q", k, got, v)
			}
		}
		if c := tr.Named("tools/call read_text_file")[0]; c.Tag("span.kind") != "client" || c.Tag("mcp.method.name") != "tools/call" || c.Tag("network.transport") != "pipe" {
			t.Errorf("the mcp node's span: %v", c.Tags)
		}
	})

	t.Run("meta", func(t *testing.T) {
		out := n.Must("call", "@meta", "meta")
		var meta map[string]any
		if err := json.Unmarshal([]byte(out), &meta); err != nil {
			t.Fatalf("the server's answer %q: %v", out, err)
		}
		tp, _ := meta["traceparent"].(string)
		parts := strings.Split(tp, "-")
		if len(parts) != 4 {
			t.Fatalf("the server got _meta %v: no traceparent", meta)
		}
		tr := j.WaitTrace(t, service, func(tr *jaeger.Trace) bool { return tr.TraceID == parts[1] && len(tr.Named("tools/call meta")) == 1 })
		if sp := tr.Named("tools/call meta")[0]; sp.SpanID != parts[2] {
			t.Errorf("the server's _meta names span %s; the mcp node's client span is %s:\n%s", parts[2], sp.SpanID, tr.Tree())
		}
		t.Logf("the server got traceparent %s; Jaeger's trace:\n%s", tp, tr.Tree())
	})

	t.Run("graph", func(t *testing.T) {
		n.Must("call", "@g", "run")
		tr := j.WaitTrace(t, service, func(tr *jaeger.Trace) bool { return len(tr.Named("graph run g")) == 1 })
		want := `nerve call [cli]
  POST /v1/sessions/{session}/nodes/{node}/call [daemon]
    execute_tool g.run [daemon]
      graph run g [daemon]
        graph step a [daemon]
          execute_tool echo.identity [daemon]
        graph step b [daemon]
          execute_tool echo.identity [daemon]
        graph step c [daemon]
          execute_tool echo.identity [daemon]
`
		if got := tr.Tree(); got != want {
			t.Errorf("the trace of a graph run, as Jaeger has it:\n%s\nwant\n%s", got, want)
		}
		t.Logf("Jaeger's trace %s:\n%s", tr.TraceID, tr.Tree())
	})

	t.Run("mcp client", func(t *testing.T) {
		var ep struct{ URL, Token string }
		if err := json.Unmarshal([]byte(n.Must("mcp", "url", "--json")), &ep); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		hc := &http.Client{Transport: bearer{ep.Token}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "tracer", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		traceID, spanID := randomHex(16), randomHex(8)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "hi"}, Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + spanID + "-01"}})
		if err != nil || res.IsError {
			t.Fatalf("calling through the MCP endpoint: %v %v", err, res)
		}
		tr := j.WaitTrace(t, service, func(tr *jaeger.Trace) bool {
			return tr.TraceID == traceID && len(tr.Named("execute_tool echo.identity")) == 1
		})
		want := `tools/call echo.identity [daemon]
  execute_tool echo.identity [daemon]
`
		if got := tr.Tree(); got != want {
			t.Errorf("the trace the MCP client began, as Jaeger has it:\n%s\nwant\n%s", got, want)
		}
		if s := tr.Named("tools/call echo.identity")[0]; s.Parent() != spanID || s.Tag("span.kind") != "server" {
			t.Errorf("nerve's server span has parent %q (kind %s), want the client's span %s", s.Parent(), s.Tag("span.kind"), spanID)
		}
		if c := tr.Named("execute_tool echo.identity")[0].Tag("nerve.caller"); c != "mcp:tracer/http" && !strings.HasPrefix(c, "mcp:tracer") {
			t.Errorf("caller %q", c)
		}
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
