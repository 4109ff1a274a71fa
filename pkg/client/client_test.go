package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// slowKind is a test node kind whose one tool, "wait", reports progress and
// then blocks until its call is cancelled, telling cancelled about it.
type slowKind struct {
	cancelled chan string
}

type slowNode struct {
	node.Base
	k *slowKind
}

var waitTool = &mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}}

func (k *slowKind) New(spec node.Spec, env node.Env) (node.Node, error) {
	n := &slowNode{k: k}
	n.Init(spec, env)
	return n, nil
}

func (n *slowNode) Start(ctx context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	return n.Machine.To(node.Ready, "")
}

func (n *slowNode) Stop(ctx context.Context) error {
	if st := n.State(); st == node.Created || st == node.Stopped {
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	return n.Machine.To(node.Stopped, "")
}

func (n *slowNode) Interrupt(ctx context.Context) error { return nil }
func (n *slowNode) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{waitTool}, nil
}
func (n *slowNode) Info() node.Info { return n.BaseInfo() }

func (n *slowNode) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	defer n.EndCall(false)
	req.Emit(node.CallEvent{Kind: node.EventProgress, Progress: 1, Total: 2, Message: "waiting"})
	<-ctx.Done()
	n.k.cancelled <- n.ID()
	return nil, ctx.Err()
}

func registry(k *slowKind) *session.Registry {
	r := &session.Registry{}
	r.Register(identity.Kind, identity.New)
	r.Register("slow", k.New)
	return r
}

// mode starts a daemon and returns a function making clients of it.
type mode struct {
	name  string
	start func(t *testing.T, opts *daemon.Options) func() *client.Client
}

// modes run every test in memory (embedded), over a real Unix socket and
// through ssh's kind of connection (a process's stdin and stdout, relayed
// to the socket as `nerve daemon dial-stdio` does), so the paths cannot
// drift apart.
var modes = []mode{
	{"embedded", func(t *testing.T, opts *daemon.Options) func() *client.Client {
		emb, err := daemon.StartEmbedded(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { emb.Close(context.Background()) })
		return func() *client.Client {
			c := client.New(client.Options{Dial: emb.Dial, Version: opts.Version})
			t.Cleanup(func() { c.Close() })
			return c
		}
	}},
	{"socket", socketMode(false, false)},
	{"socket one-shot", socketMode(true, false)},
	{"ssh", socketMode(false, true)},
	{"ssh one-shot", socketMode(true, true)},
}

// socketMode serves a daemon on a Unix socket; its clients make each
// request on a connection of its own with oneShot (Options.OneShot), and
// reach it through a fake ssh (fakeSSH) with ssh.
func socketMode(oneShot, ssh bool) func(t *testing.T, opts *daemon.Options) func() *client.Client {
	return func(t *testing.T, opts *daemon.Options) func() *client.Client {
		d, err := daemon.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := os.MkdirTemp("", "nc")
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, "s")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Serve(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			<-done
			d.Close(context.Background())
			os.RemoveAll(dir)
		})
		return func() *client.Client {
			o := client.Options{Socket: sock, Version: opts.Version, OneShot: oneShot}
			if ssh {
				o.Dial = fakeSSH(t, sock).Dial
			}
			c := client.New(o)
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
}

func forModes(t *testing.T, f func(t *testing.T, newClient func() *client.Client, k *slowKind)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			k := &slowKind{cancelled: make(chan string, 8)}
			newClient := m.start(t, &daemon.Options{Registry: registry(k), Version: "test"})
			f(t, newClient, k)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNodeLifecycle(t *testing.T) {
	forModes(t, func(t *testing.T, newClient func() *client.Client, _ *slowKind) {
		ctx := ctxT(t)
		c := newClient()
		s := c.Session("default")
		info, err := s.Add(ctx, node.Spec{ID: "echo", Kind: "identity"})
		if err != nil {
			t.Fatalf("Add: %v", err)
		}
		if info.State != node.Ready || info.Tools != 1 {
			t.Errorf("after Add: state %s, %d tools; want READY with 1 tool", info.State, info.Tools)
		}
		infos, err := s.Nodes(ctx)
		if err != nil || len(infos) != 1 || infos[0].ID != "echo" {
			t.Fatalf("Nodes = %+v, %v; want [echo]", infos, err)
		}
		tools, err := mcpclient.Tools(ctx, s, "echo")
		if err != nil || len(tools) != 1 || tools[0].Name != "identity" {
			t.Fatalf("Tools = %v, %v", tools, err)
		}
		ts, err := mcpclient.Toolset(ctx, s)
		if err != nil || len(ts) != 1 || ts[0].Qualified != "echo.identity" || ts[0].LLMName != "echo__identity" {
			t.Fatalf("Toolset = %+v, %v", ts, err)
		}
		res, err := mcpclient.Call(ctx, s, "echo", "identity", json.RawMessage(`{"text":"héllo"}`), nil)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		if got := node.ResultText(res, 0); got != "héllo" || res.IsError {
			t.Errorf("Call result %q (isError %v), want héllo", got, res.IsError)
		}
		d, err := s.Node(ctx, "echo")
		if err != nil || d.Spec.Kind != "identity" || d.Info.Calls != 1 {
			t.Errorf("Node = %+v, %v; want the identity spec and 1 call", d, err)
		}
		if info, err := s.Restart(ctx, "echo"); err != nil || info.State != node.Ready {
			t.Errorf("Restart = %s, %v; want READY", info.State, err)
		}
		if err := s.Interrupt(ctx, "echo"); err != nil {
			t.Errorf("Interrupt: %v", err)
		}
		if err := s.Remove(ctx, "echo"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if infos, err := s.Nodes(ctx); err != nil || len(infos) != 0 {
			t.Errorf("after Remove: Nodes = %v, %v; want none", infos, err)
		}
		kinds, err := c.Kinds(ctx)
		if err != nil || strings.Join(kinds, ",") != "identity,slow" {
			t.Errorf("Kinds = %v, %v", kinds, err)
		}
	})
}

func TestTypedErrors(t *testing.T) {
	forModes(t, func(t *testing.T, newClient func() *client.Client, _ *slowKind) {
		ctx := ctxT(t)
		c := newClient()
		s := c.Session("default")
		if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: "identity"}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name    string
			do      func() error
			want    error
			also    error // a pkg/node sentinel it must match too
			message string
		}{
			{"unknown node", func() error { _, err := s.Call(ctx, "ecko", "identity", nil, nil); return err },
				client.ErrNodeNotFound, node.ErrNotFound, `did you mean "echo"`},
			{"unknown session", func() error { _, err := c.Session("work").Nodes(ctx); return err },
				client.ErrSessionNotFound, nil, "nerve -s work node add"},
			{"unknown tool", func() error { _, err := s.Call(ctx, "echo", "identiti", nil, nil); return err },
				client.ErrUnknownTool, node.ErrUnknownTool, `did you mean "identity"`},
			{"bad arguments", func() error {
				_, err := s.Call(ctx, "echo", "identity", json.RawMessage(`{"text":5}`), nil)
				return err
			}, client.ErrBadArgs, node.ErrBadArgs, "text"},
			{"node exists", func() error { _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: "identity"}); return err },
				client.ErrExists, nil, "node rm echo"},
			{"bad node id", func() error { _, err := s.Add(ctx, node.Spec{ID: "Bad.Id", Kind: "identity"}); return err },
				client.ErrBadRequest, nil, `"bad-id"`},
			{"unknown kind", func() error { _, err := s.Add(ctx, node.Spec{ID: "x", Kind: "nope"}); return err },
				client.ErrBadRequest, nil, "known kinds"},
			{"bad session name", func() error { _, err := c.Session("Work!").Nodes(ctx); return err },
				client.ErrBadRequest, nil, "invalid session name"},
			{"remove unknown session", func() error { return c.RemoveSession(ctx, "nope") },
				client.ErrSessionNotFound, nil, "nope"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.do()
				if !errors.Is(err, tt.want) {
					t.Fatalf("error %v; want %v", err, tt.want)
				}
				if tt.also != nil && !errors.Is(err, tt.also) {
					t.Errorf("error %v does not match %v", err, tt.also)
				}
				if !strings.Contains(err.Error(), tt.message) {
					t.Errorf("message %q does not say %q", err.Error(), tt.message)
				}
			})
		}
	})
}

func TestDaemonUnavailable(t *testing.T) {
	c := client.New(client.Options{Socket: filepath.Join(t.TempDir(), "none.sock")})
	_, err := c.Version(context.Background())
	if !errors.Is(err, client.ErrDaemonUnavailable) || !strings.Contains(err.Error(), "nerve daemon start") {
		t.Fatalf("error %v; want ErrDaemonUnavailable saying how to start it", err)
	}
}

// A call streams its progress, and a client that goes away mid-call
// cancels the call in the daemon; another client's call is not held up.
func TestCallStreamsAndCancelsOnDisconnect(t *testing.T) {
	forModes(t, func(t *testing.T, newClient func() *client.Client, k *slowKind) {
		ctx := ctxT(t)
		s := newClient().Session("default")
		for _, spec := range []node.Spec{{ID: "slow", Kind: "slow"}, {ID: "echo", Kind: "identity"}} {
			if _, err := s.Add(ctx, spec); err != nil {
				t.Fatal(err)
			}
		}
		callCtx, cancel := context.WithCancel(ctx)
		progress := make(chan api.CallLine, 4)
		errc := make(chan error, 1)
		go func() {
			_, err := s.Call(callCtx, "slow", "wait", nil, func(l api.CallLine) {
				if l.Kind == node.EventProgress {
					progress <- l
				}
			})
			errc <- err
		}()
		select {
		case l := <-progress:
			if l.Message != "waiting" || l.Total != 2 {
				t.Errorf("progress line %+v", l)
			}
		case <-ctx.Done():
			t.Fatal("no progress line arrived")
		}
		// The slow call is in flight: another client's call still answers.
		other := newClient().Session("default")
		if res, err := mcpclient.Call(ctx, other, "echo", "identity", json.RawMessage(`{"text":"x"}`), nil); err != nil || node.ResultText(res, 0) != "x" {
			t.Fatalf("unrelated call during a slow one: %v, %v", res, err)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v; want context.Canceled", err)
		}
		select {
		case id := <-k.cancelled:
			if id != "slow" {
				t.Errorf("cancelled node %q", id)
			}
		case <-ctx.Done():
			t.Fatal("the daemon did not cancel the call when its client went away")
		}
	})
}

// Two clients of one session see each other's calls as events.
func TestWatchersSeeOtherClientsCalls(t *testing.T) {
	forModes(t, func(t *testing.T, newClient func() *client.Client, _ *slowKind) {
		ctx := ctxT(t)
		a, b := newClient().Session("default"), newClient().Session("default")
		if _, err := a.Add(ctx, node.Spec{ID: "echo", Kind: "identity"}); err != nil {
			t.Fatal(err)
		}
		w, err := b.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := a.Call(ctx, "echo", "identity", json.RawMessage(`{"text":"x"}`), nil); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for len(kinds) < 2 || kinds[len(kinds)-1] != session.EventCallEnd {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("Next after %v: %v", kinds, err)
			}
			if ev.Node == "echo" && (ev.Kind == session.EventCallStart || ev.Kind == session.EventCallEnd) {
				if ev.Tool != "identity" {
					t.Errorf("event %+v names the wrong tool", ev)
				}
				kinds = append(kinds, ev.Kind)
			}
		}
		if kinds[0] != session.EventCallStart {
			t.Errorf("events %v; want call_start then call_end", kinds)
		}
		w.Close()
		if _, err := w.Next(ctx); !errors.Is(err, client.ErrWatchClosed) {
			t.Errorf("Next after Close: %v; want ErrWatchClosed", err)
		}
	})
}

func TestVersionMismatchWarnsOnce(t *testing.T) {
	emb, err := daemon.StartEmbedded(context.Background(), &daemon.Options{Version: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close(context.Background())
	var warned atomic.Int32
	var got string
	var mu sync.Mutex
	c := client.New(client.Options{Dial: emb.Dial, Version: "v1", OnVersionMismatch: func(v string) {
		mu.Lock()
		got = v
		mu.Unlock()
		warned.Add(1)
	}})
	for range 3 {
		if _, err := c.Version(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if warned.Load() != 1 || got != "v2" {
		t.Errorf("warned %d times about %q; want once about v2", warned.Load(), got)
	}
}

// TestVersionUnstampedBuildDoesNotWarn: a daemon started by `go run` says
// "devel" (no VCS stamp); a `go install`ed nerve of the same tree must not
// warn on every command, nor the other way round.
func TestVersionUnstampedBuildDoesNotWarn(t *testing.T) {
	for _, c := range []struct{ daemon, client string }{{"devel", "devel-0123456789ab"}, {"devel-0123456789ab", "devel"}} {
		emb, err := daemon.StartEmbedded(context.Background(), &daemon.Options{Version: c.daemon})
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		cl := client.New(client.Options{Dial: emb.Dial, Version: c.client, OnVersionMismatch: func(string) { warned = true }})
		if _, err := cl.Version(context.Background()); err != nil {
			t.Fatal(err)
		}
		if warned {
			t.Errorf("daemon %s, client %s: warned about a version mismatch", c.daemon, c.client)
		}
		emb.Close(context.Background())
	}
}

// A request that finds the daemon gone (stopped between two requests of
// one command) asks Revive for a daemon and is sent once more; a POST whose
// connection drops after it was sent is not sent again (it may have run).
func TestReviveSendsAgainOnlyWhatWasNotRun(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("one-shot=%v", oneShot), func(t *testing.T) { reviveSendsAgainOnlyWhatWasNotRun(t, oneShot) })
	}
}

func reviveSendsAgainOnlyWhatWasNotRun(t *testing.T, oneShot bool) {
	dir := testutil.SocketDir(t)
	sock := filepath.Join(dir, "s.sock")
	var revived, posts atomic.Int32
	serve := func() net.Listener {
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer conn.Close()
					buf := make([]byte, 4096)
					n, _ := conn.Read(buf)
					if strings.HasPrefix(string(buf[:n]), "POST") {
						posts.Add(1)
						return // dropped after it was read
					}
					conn.Write([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"version\":\"v1\"}\n"))
				}()
			}
		}()
		return l
	}
	var l net.Listener
	if _, err := client.New(client.Options{Socket: sock, OneShot: oneShot, Revive: func(context.Context) error {
		t.Error("Revive called for a request that said no")
		return nil
	}}).Version(client.WithRevive(context.Background(), false)); !errors.Is(err, client.ErrDaemonUnavailable) {
		t.Errorf("without revive: %v", err)
	}
	c := client.New(client.Options{Socket: sock, OneShot: oneShot, Revive: func(context.Context) error {
		revived.Add(1)
		l = serve()
		return nil
	}})
	defer func() {
		if l != nil {
			l.Close()
		}
	}()
	v, err := c.Version(context.Background())
	if err != nil || v.Version != "v1" || revived.Load() != 1 {
		t.Fatalf("Version with no daemon, then revived: %+v, %v (revived %d)", v, err, revived.Load())
	}
	_, err = c.Session("default").Call(context.Background(), "n", "t", nil, nil)
	if !errors.Is(err, client.ErrDaemonUnavailable) || posts.Load() != 1 {
		t.Errorf("a POST dropped after it was sent: %v, sent %d times; want unavailable, once", err, posts.Load())
	}
}

// TestReviveSendsAgainWhatAStoppingDaemonDidNotRun: a daemon that stops
// as a command sends a request either resets the connection before the
// request is written (it was still queued on the socket) or answers 503
// stopping; neither ran anything, so even a POST is sent again, once, to
// the daemon Revive starts. 503 shutting_down (stopped while it ran) is
// not sent again.
func TestReviveSendsAgainWhatAStoppingDaemonDidNotRun(t *testing.T) {
	dir := testutil.SocketDir(t)
	sock := filepath.Join(dir, "s.sock")
	// serve answers the n-th POST (from 1) with answer(n).
	serve := func(answer func(n int32) (int, string)) (posts *atomic.Int32, stop func()) {
		posts = &atomic.Int32{}
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, body := answer(posts.Add(1))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		})}
		go srv.Serve(l)
		return posts, func() { srv.Close() }
	}
	ok := func(int32) (int, string) { return 200, "{}" }

	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset before written, one-shot=%v", oneShot), func(t *testing.T) {
			resetBeforeWritten(t, dir, sock, oneShot, serve)
		})
	}

	t.Run("kept-alive connection closed", func(t *testing.T) {
		posts, stop := serve(ok)
		defer stop()
		var revived atomic.Int32
		var first *breakableConn
		c := client.New(client.Options{
			Dial: func(ctx context.Context) (net.Conn, error) {
				conn, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
				if first == nil && err == nil {
					first = &breakableConn{Conn: conn}
					return first, nil
				}
				return conn, err
			},
			Revive: func(context.Context) error { revived.Add(1); return nil },
		})
		defer c.Close()
		if err := c.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The daemon closed the connection kept for the next request:
		// net/http's transport sends a request it wrote nothing of on a
		// reused connection again itself, POST included (its body can be
		// read again), on a new connection; the daemon answers.
		first.broken.Store(true)
		if err := c.Shutdown(context.Background()); err != nil || revived.Load() != 0 || posts.Load() != 2 {
			t.Errorf("a POST on a kept-alive connection closed before it was written: %v, revived %d, daemon saw %d POSTs; want nil, 0, 2", err, revived.Load(), posts.Load())
		}
	})

	for _, tc := range []struct {
		code          string
		oneShot       bool
		revived, sent int32
		want          error
	}{
		{api.CodeStopping, false, 1, 2, nil},
		{api.CodeStopping, true, 1, 2, nil},
		{api.CodeShuttingDown, false, 0, 1, client.ErrShuttingDown},
		{api.CodeShuttingDown, true, 0, 1, client.ErrShuttingDown},
	} {
		t.Run(fmt.Sprintf("503 %s, one-shot=%v", tc.code, tc.oneShot), func(t *testing.T) {
			posts, stop := serve(func(n int32) (int, string) {
				if n == 1 {
					return 503, `{"error":{"code":"` + tc.code + `","message":"stopping"}}`
				}
				return 200, "{}"
			})
			defer stop()
			var revived atomic.Int32
			c := client.New(client.Options{Socket: sock, OneShot: tc.oneShot, Revive: func(context.Context) error {
				revived.Add(1)
				return nil
			}})
			defer c.Close()
			err := c.Shutdown(context.Background())
			if !errors.Is(err, tc.want) || revived.Load() != tc.revived || posts.Load() != tc.sent {
				t.Errorf("%v, revived %d, sent %d; want %v, %d, %d", err, revived.Load(), posts.Load(), tc.want, tc.revived, tc.sent)
			}
		})
	}
}

// resetBeforeWritten: a POST whose connection was reset before a byte of
// it was written (queued on a socket that closed) is sent again, once, to
// the daemon Revive starts.
func resetBeforeWritten(t *testing.T, dir, sock string, oneShot bool, serve func(func(int32) (int, string)) (*atomic.Int32, func())) {
	var revived atomic.Int32
	var posts *atomic.Int32
	var stop func()
	first := true
	c := client.New(client.Options{
		OneShot: oneShot,
		Dial: func(ctx context.Context) (net.Conn, error) {
			if !first {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}
			first = false
			// Queued on a socket that closes before it is accepted.
			q := filepath.Join(dir, "q.sock")
			l, err := net.Listen("unix", q)
			if err != nil {
				return nil, err
			}
			conn, err := net.Dial("unix", q)
			l.Close()
			return conn, err
		},
		Revive: func(context.Context) error {
			revived.Add(1)
			posts, stop = serve(func(int32) (int, string) { return 200, "{}" })
			return nil
		},
	})
	defer c.Close()
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("POST on a connection reset before it was written: %v", err)
	}
	defer stop()
	if revived.Load() != 1 || posts.Load() != 1 {
		t.Errorf("revived %d, sent to the new daemon %d times; want 1, 1", revived.Load(), posts.Load())
	}
}

// breakableConn fails every write with EPIPE, writing nothing, once broken.
type breakableConn struct {
	net.Conn
	broken atomic.Bool
}

func (c *breakableConn) Write(p []byte) (int, error) {
	if c.broken.Load() {
		return 0, &net.OpError{Op: "write", Net: "unix", Err: syscall.EPIPE}
	}
	return c.Conn.Write(p)
}
