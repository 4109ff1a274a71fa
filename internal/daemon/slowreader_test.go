//go:build unix

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// A stalled reader is a client that sent a call and then stopped reading
// its socket, as `nerve call` does when a person presses Ctrl-Z: the
// daemon's writes to it block once the socket's buffer is full.

// mcpPeer is an MCP server to try a stalled reader against: its slow tool
// with progress (flood: many events at once; paced: a few, over a while)
// and its echo.
type mcpPeer struct {
	name         string
	command      func(t *testing.T) []string
	slow         string
	flood, paced func(steps int) string // arguments of slow
	echo, echoed string                 // arguments of echo, and the text it answers
}

var mcpPeers = []mcpPeer{{
	name:    "go fixture",
	command: func(t *testing.T) []string { return []string{testutil.BuildBinary(t, "./fixtures/mcpserver")} },
	slow:    "slow",
	flood:   func(steps int) string { return fmt.Sprintf(`{"ms":1,"steps":%d}`, steps) },
	paced:   func(steps int) string { return fmt.Sprintf(`{"ms":%d,"steps":%d}`, steps*20, steps) },
	echo:    `{"text":"still here"}`, echoed: "still here",
}, {
	name:    "server-everything",
	command: func(t *testing.T) []string { return npmfix.ServerEverything(t) },
	slow:    "trigger-long-running-operation",
	// Node's timers fire at most once a millisecond: 1,500 steps take
	// some 2 s and write far more than a socket holds.
	flood:  func(steps int) string { return fmt.Sprintf(`{"duration":%g,"steps":%d}`, float64(steps)/1000, steps) },
	paced:  func(steps int) string { return fmt.Sprintf(`{"duration":%g,"steps":%d}`, float64(steps)/50, steps) },
	echo:   `{"message":"still here"}`,
	echoed: "Echo: still here",
}}

// floodSteps: the stalled call's progress events, some 50–100 bytes each,
// far more than its socket (smallBufferSocket) and queue hold.
const floodSteps = 1500

// TestStalledReaderFreezesNoOne: a client that stops reading its call's
// answer holds up nobody else. Beside it another call's progress and
// result flow, the stalled call itself runs to its end in the node, and
// later calls (a plain echo, a call with progress) answer while the
// client is still stalled. The stalled client, once it reads again, gets
// the events that fit in its queue, a line saying how many were skipped,
// and its result; killed instead, it leaves no goroutine behind.
//
// The stalled client is a `nerve call` (the daemon's call route) or an
// MCP client of `nerve mcp serve` (the connection switched to MCP).
func TestStalledReaderFreezesNoOne(t *testing.T) {
	defer func(n int) { callQueueBytes = n }(callQueueBytes)
	callQueueBytes = 16 << 10
	for _, p := range mcpPeers {
		t.Run(p.name, func(t *testing.T) {
			e := newStallEnv(t, p)
			for _, via := range []string{"call", "mcp serve"} {
				for _, resume := range []bool{true, false} {
					end := "killed"
					if resume {
						end = "resumed"
					}
					t.Run(via+"/"+end, func(t *testing.T) { stalledReader(t, e, via, resume) })
				}
			}
		})
	}
}

// stallEnv is a daemon serving a node n of one peer on a socket whose
// connections have small buffers.
type stallEnv struct {
	p    mcpPeer
	d    *Daemon
	sock string
	cs   *client.Session
	s    *session.Session
}

func newStallEnv(t *testing.T, p mcpPeer) *stallEnv {
	reg := testRegistry()
	reg.Register(mcpnode.Kind, mcpnode.Factory(nil))
	d, err := New(&Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	e := &stallEnv{p: p, d: d, sock: smallBufferSocket(t, d)}
	c := client.New(client.Options{Socket: e.sock})
	t.Cleanup(func() { c.Close() })
	e.cs = c.Session(DefaultSession)
	if _, err := e.cs.Add(t.Context(), node.Spec{ID: "n", Kind: mcpnode.Kind, Command: p.command(t)}); err != nil {
		t.Fatal(err)
	}
	if e.s, err = d.session(t.Context(), DefaultSession, false); err != nil {
		t.Fatal(err)
	}
	return e
}

func stalledReader(t *testing.T, e *stallEnv, via string, resume bool) {
	p, sock, cs := e.p, e.sock, e.cs
	ended := e.s.SubscribeFiltered(16, func(ev *session.Event) bool { return ev.Kind == session.EventCallEnd && ev.Tool == p.slow })
	defer ended.Close()
	before := handlerGoroutines()
	var err error

	// The stalled client: it sends its call and reads nothing more.
	var stalled net.Conn
	args := p.flood(floodSteps)
	if via == "call" {
		if stalled, err = net.Dial("unix", sock); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"tool":%q,"arguments":%s}`, p.slow, args)
		fmt.Fprintf(stalled, "POST /v1/sessions/%s/nodes/n/call HTTP/1.1\r\nHost: nerve\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", DefaultSession, len(body), body)
	} else {
		if stalled, err = cs.MCPStdio(t.Context(), "n", ""); err != nil {
			t.Fatal(err)
		}
		send(t, stalled, initLine)
		answer(t, bufio.NewReader(stalled), 1)
		send(t, stalled, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"progressToken":"p"}}}`, p.slow, args))
	}
	defer stalled.Close()

	// Beside it, a caller that reads: every progress event and the result.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	progressCall(ctx, t, cs, p, 20)

	// The stalled call ran to its end in the node: the node's reader was
	// never held up by the client's socket.
	waitEvents(ctx, t, ended, 2, "the stalled client's call to end in the node (the node froze behind it)")

	// Still stalled, and others' calls answer.
	res, err := cs.Call(ctx, "n", "echo", json.RawMessage(p.echo), nil)
	if err != nil || !strings.Contains(string(res), p.echoed) {
		t.Fatalf("echo beside a stalled client: %s, %v", res, err)
	}
	progressCall(ctx, t, cs, p, 5)

	if resume {
		_ = stalled.SetReadDeadline(time.Now().Add(60 * time.Second))
		if via == "call" {
			resumedCall(t, stalled)
		} else {
			resumedMCP(t, stalled)
		}
	}
	stalled.Close()
	// Nothing is left of the stalled client's call: no handler, no queue.
	testutil.WaitFor(t, 20*time.Second, func() bool { return handlerGoroutines() <= before }, "the stalled client's goroutines to end")
}

// resumedCall reads the answer of a call route's client that was stalled:
// what fitted in its queue, one line saying how much was skipped, and
// its result.
func resumedCall(t *testing.T, conn net.Conn) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	progress, skipped, result := 0, "", ""
	dec := json.NewDecoder(resp.Body)
	for result == "" {
		var l api.CallLine
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("reading the resumed client's answer after %d progress lines: %v", progress, err)
		}
		switch {
		case l.Kind == api.EventProgress:
			progress++
		case l.Kind == api.EventLog && l.Logger == "nerve":
			skipped = l.Text
		case l.Kind == api.LineResult:
			result = string(l.Result)
		default:
			t.Fatalf("unexpected line %+v", l)
		}
	}
	if progress == 0 || progress >= floodSteps {
		t.Errorf("the resumed client read %d of %d progress lines; want some, and not all (it was stalled)", progress, floodSteps)
	}
	if want := fmt.Sprintf("skipped %d events", floodSteps-progress); !strings.Contains(skipped, want) {
		t.Errorf("the notice of skipped events is %q, want it to say %q", skipped, want)
	}
	if strings.Contains(result, `"isError":true`) {
		t.Errorf("the resumed client's result: %s", result)
	}
}

// resumedMCP reads what an MCP client that was stalled is sent: progress
// notifications, then the call's result.
func resumedMCP(t *testing.T, conn net.Conn) {
	t.Helper()
	r := bufio.NewReader(conn)
	progress := 0
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the resumed MCP client's messages after %d progress notifications: %v", progress, err)
		}
		var m rpc
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", line)
		}
		if m.Method == "notifications/progress" {
			progress++
			continue
		}
		if m.ID != nil && *m.ID == 2 {
			if m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
				t.Errorf("the resumed MCP client's result: %s %s", m.Result, m.Error)
			}
			break
		}
	}
	if progress == 0 || progress > floodSteps {
		t.Errorf("the resumed MCP client read %d of %d progress notifications", progress, floodSteps)
	}
}

// progressCall calls p's slow tool with steps paced events and checks
// that each arrived, and the result.
func progressCall(ctx context.Context, t *testing.T, cs *client.Session, p mcpPeer, steps int) {
	t.Helper()
	got := 0
	res, err := cs.Call(ctx, "n", p.slow, json.RawMessage(p.paced(steps)), func(l api.CallLine) {
		if l.Kind == api.EventProgress {
			got++
		}
	})
	if err != nil || strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("a call beside a stalled client: %s, %v", res, err)
	}
	if got != steps {
		t.Errorf("a call beside a stalled client got %d progress events, want %d", got, steps)
	}
}

// waitEvents waits for n events on sub.
func waitEvents(ctx context.Context, t *testing.T, sub *session.Subscription, n int, what string) {
	t.Helper()
	for range n {
		select {
		case <-sub.C:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// handlerGoroutines counts the goroutines of calls' handlers (the call
// route's, the MCP server's) and of the queues to slow readers.
func handlerGoroutines() int {
	buf := make([]byte, 1<<20)
	st := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for g := range strings.SplitSeq(st, "\n\n") {
		if strings.Contains(g, "daemon.(*Daemon).handleCall") || strings.Contains(g, "mcpserver.(*Server).toolHandler") ||
			strings.Contains(g, "sendq.(*Queue[...]).drain") {
			n++
		}
	}
	return n
}

// smallBufferSocket serves d on a Unix socket whose connections have a
// small send buffer, so that a client that does not read blocks the
// daemon's writes after a few kilobytes rather than a few hundred.
func smallBufferSocket(t *testing.T, d *Daemon) string {
	sock := filepath.Join(testutil.SocketDir(t), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, smallBuffers{ln}) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.SetWriteBuffer(4 << 10)
	}
	return c, err
}
