package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// stdioDaemon serves a daemon with node echo (identity) in the default
// session on a Unix socket and returns it with a client.
func stdioDaemon(t *testing.T) (*Daemon, *client.Client) {
	t.Helper()
	d, err := New(&Options{Registry: testRegistry(), Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	c := client.New(client.Options{Socket: serveSocket(t, d)})
	t.Cleanup(func() { c.Close() })
	if _, err := c.Session(DefaultSession).Add(t.Context(), node.Spec{ID: "echo", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	return d, c
}

// waitRelays waits until the daemon serves no MCP connection.
func waitRelays(t *testing.T, d *Daemon) {
	t.Helper()
	done := make(chan struct{})
	go func() { d.relays.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon still serves an MCP connection")
	}
}

// rpc is one JSON-RPC line as read from the connection.
type rpc struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// answer reads lines until the answer to id.
func answer(t *testing.T, r *bufio.Reader, id int) rpc {
	t.Helper()
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("waiting for the answer to %d: %v", id, err)
		}
		var m rpc
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", line)
		}
		if m.ID != nil && *m.ID == id && m.Method == "" {
			return m
		}
	}
}

func send(t *testing.T, w io.Writer, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestMCPStdioServesUntilEOF: the connection of `nerve mcp serve` speaks
// MCP with the session's tools, and the end of the client's input ends
// the daemon's side of it.
func TestMCPStdioServesUntilEOF(t *testing.T) {
	for _, tt := range []struct{ name, node, names, tool string }{
		{"session", "", "", "echo.identity"},
		{"llm names", "", "llm", "echo__identity"},
		{"node mode", "echo", "", "identity"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, c := stdioDaemon(t)
			conn, err := c.Session(DefaultSession).MCPStdio(t.Context(), tt.node, tt.names)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			send(t, conn, initLine)
			if a := answer(t, r, 1); a.Error != nil {
				t.Fatalf("initialize: %s", a.Error)
			}
			send(t, conn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tt.tool+`","arguments":{"text":"hello"}}}`)
			if a := answer(t, r, 2); a.Error != nil || !strings.Contains(string(a.Result), "hello") || strings.Contains(string(a.Result), `"isError":true`) {
				t.Fatalf("tools/call %s: %s %s", tt.tool, a.Result, a.Error)
			}
			if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatalf("after EOF the daemon should close the connection: %v", err)
			}
			waitRelays(t, d)
		})
	}
}

// TestMCPStdioRefused: a connection for a session or node that does not
// exist, or with bad options, is refused before any MCP is spoken, with
// the daemon's error.
func TestMCPStdioRefused(t *testing.T) {
	_, c := stdioDaemon(t)
	for _, tt := range []struct {
		name, session, node, names string
		want                       error
		msg                        string
	}{
		{"no session", "nosuch", "", "", client.ErrSessionNotFound, `no session "nosuch"`},
		{"no node", DefaultSession, "nope", "", client.ErrNodeNotFound, "nope"},
		{"bad names", DefaultSession, "", "dots", client.ErrBadRequest, "unknown tool naming"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := c.Session(tt.session).MCPStdio(t.Context(), tt.node, tt.names)
			if err == nil {
				conn.Close()
				t.Fatal("connected; want an error")
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q; want %v saying %q", err, tt.want, tt.msg)
			}
		})
	}
}

// TestMCPStdioNeedsUpgrade: a plain GET of the route says how to use it,
// and a peer of another uid is refused before the switch.
func TestMCPStdioNeedsUpgrade(t *testing.T) {
	d, err := New(&Options{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	for _, tt := range []struct {
		name    string
		upgrade bool
		peer    *peer
		status  int
	}{
		{"no upgrade", false, nil, http.StatusUpgradeRequired},
		{"other uid", true, &peer{uid: os.Getuid() + 1}, http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/v1/sessions/default/mcp/stdio", nil)
			if tt.upgrade {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", api.UpgradeMCPStdio)
			}
			if tt.peer != nil {
				req = req.WithContext(context.WithValue(req.Context(), peerKey{}, tt.peer))
			}
			w := httptest.NewRecorder()
			d.Handler().ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Errorf("status %d; want %d (%s)", w.Code, tt.status, w.Body)
			}
		})
	}
}

// TestMCPStdioEndsWithTheDaemon: closing the daemon ends the MCP
// connections it serves, and Close waits for them.
func TestMCPStdioEndsWithTheDaemon(t *testing.T) {
	d, c := stdioDaemon(t)
	conn, err := c.Session(DefaultSession).MCPStdio(t.Context(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	send(t, conn, initLine)
	answer(t, r, 1)
	closed := make(chan error, 1)
	go func() { closed <- d.Close(context.Background()) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while an MCP connection was open")
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, r); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the connection stayed open after Close")
		}
	}
}

// TestMCPStdioNodeModeAsksTheClient: in node mode, the sampling and
// elicitation requests of the server behind the node reach the MCP client
// on the connection.
func TestMCPStdioNodeModeAsksTheClient(t *testing.T) {
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	reg := testRegistry()
	reg.Register(mcpnode.Kind, mcpnode.Factory(nil))
	d, err := New(&Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	c := client.New(client.Options{Socket: serveSocket(t, d)})
	defer c.Close()
	s := c.Session(DefaultSession)
	if _, err := s.Add(t.Context(), node.Spec{ID: "fx", Kind: mcpnode.Kind, Command: []string{server}}); err != nil {
		t.Fatal(err)
	}
	conn, err := s.MCPStdio(t.Context(), "fx", "")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "yes"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "blue"}}, nil
		},
	}).Connect(t.Context(), &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"sample", map[string]any{"prompt": "?"}, "m said: yes"},
		{"elicit", map[string]any{"message": "?"}, "user answered: blue"},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.want) {
			t.Errorf("%s: %v %+v, want %q", tc.tool, err, res, tc.want)
		}
	}
	cs.Close()
	waitRelays(t, d)
}

// TestMCPStdioEndsWithTheSession: removing the session closes the MCP
// connections serving it, so their clients start afresh.
func TestMCPStdioEndsWithTheSession(t *testing.T) {
	d, c := stdioDaemon(t)
	s := c.Session("work")
	if _, err := s.Add(t.Context(), node.Spec{ID: "w", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	conn, err := s.MCPStdio(t.Context(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	send(t, conn, initLine)
	answer(t, r, 1)
	if err := c.RemoveSession(t.Context(), "work"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatalf("the connection should end with its session: %v", err)
	}
	waitRelays(t, d)
}
