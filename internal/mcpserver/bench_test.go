package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

func benchSession(b *testing.B) *session.Session {
	s := session.New("bench", all.Registry(nil), nil)
	b.Cleanup(func() { s.Close(context.Background()) })
	if _, err := s.Add(b.Context(), node.Spec{ID: "echo", Kind: "identity"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// pipes returns a client and a server transport joined by two OS pipes:
// what `nerve mcp serve` and its client exchange over stdio.
func pipes(b *testing.B) (client, server mcp.Transport) {
	cr, sw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	return &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.IOTransport{Reader: sr, Writer: sw}
}

func benchServe(b *testing.B, backend mcpserver.Backend, ct, st mcp.Transport) *mcp.ClientSession {
	srv := mcpserver.New(backend, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	<-srv.Ready()
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

func benchCall(b *testing.B, cs *mcp.ClientSession) {
	p := &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "hello"}}
	b.ReportAllocs()
	cpu := testutil.CPUMeter()
	for b.Loop() {
		res, err := cs.CallTool(b.Context(), p)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	cpu(b)
}

// BenchmarkCallDirect is the baseline: the same call on the session.
func BenchmarkCallDirect(b *testing.B) {
	s := benchSession(b)
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	cpu := testutil.CPUMeter()
	for b.Loop() {
		if _, err := s.CallTool(b.Context(), "echo.identity", args, nil); err != nil {
			b.Fatal(err)
		}
	}
	cpu(b)
}

// BenchmarkCallStdio is a call from an MCP client through OS pipes to the
// server on the session (the daemon's side of the endpoint).
func BenchmarkCallStdio(b *testing.B) {
	ct, st := pipes(b)
	benchCall(b, benchServe(b, mcpserver.NewSessionBackend(benchSession(b)), ct, st))
}

// BenchmarkCallStdioRelay is `nerve mcp serve` as it is: an MCP client
// through OS pipes to a byte relay, and through the daemon's Unix socket
// to the server the daemon runs on the session.
func BenchmarkCallStdioRelay(b *testing.B) {
	d, err := daemon.New(&daemon.Options{Registry: all.Registry(nil)})
	if err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nb")
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-served; d.Close(context.Background()); os.RemoveAll(dir) })
	c := client.New(client.Options{Socket: sock})
	b.Cleanup(func() { c.Close() })
	sess := c.Session(daemon.DefaultSession)
	if _, err := sess.Add(b.Context(), node.Spec{ID: "echo", Kind: "identity"}); err != nil {
		b.Fatal(err)
	}
	conn, err := sess.MCPStdio(b.Context(), "", "")
	if err != nil {
		b.Fatal(err)
	}
	cr, rw, err := os.Pipe() // client reads what the relay writes
	if err != nil {
		b.Fatal(err)
	}
	rr, cw, err := os.Pipe() // the relay reads what the client writes
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(conn, rr); conn.Close() })
	wg.Go(func() { io.Copy(rw, conn); rw.Close() })
	b.Cleanup(func() { cw.Close(); wg.Wait(); rr.Close(); cr.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	benchCall(b, cs)
}

// BenchmarkCallHTTP is a call through the streamable HTTP endpoint on
// 127.0.0.1 with the bearer token.
func BenchmarkCallHTTP(b *testing.B) {
	s := benchSession(b)
	tok := mcpserver.NewToken()
	ep, err := mcpserver.StartEndpoint(&mcpserver.EndpointOptions{HTTPOptions: mcpserver.HTTPOptions{
		Token:   tok,
		Session: func(context.Context, string) (*session.Session, error) { return s, nil },
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ep.Close(context.Background()) })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.StreamableClientTransport{
		Endpoint:   ep.URL("bench"),
		HTTPClient: &http.Client{Transport: bearerRT(tok)},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	benchCall(b, cs)
}

type bearerRT string

func (t bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(t))
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkCallStdioSDK is the floor of any MCP server over stdio: a bare
// Go SDK server whose one tool answers at once, over the same pipes.
func BenchmarkCallStdioSDK(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo.identity", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	ct, st := pipes(b)
	ctx := b.Context()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	benchCall(b, cs)
}
