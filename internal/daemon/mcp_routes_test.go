package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// lineRecorder is the client end of an attach stream that never answers:
// it passes every line it is sent to lines.
type lineRecorder struct {
	header http.Header
	lines  chan api.AttachLine
}

func (c *lineRecorder) Header() http.Header { return c.header }
func (c *lineRecorder) WriteHeader(int)     {}
func (c *lineRecorder) Flush()              {}
func (c *lineRecorder) Write(b []byte) (int, error) {
	var line api.AttachLine
	if err := json.Unmarshal(b, &line); err != nil {
		return 0, err
	}
	c.lines <- line
	return len(b), nil
}

// nextLine waits for the next line of kind, skipping others.
func nextLine(t *testing.T, lines <-chan api.AttachLine, kind string) api.AttachLine {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l := <-lines:
			if l.Kind == kind {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q line came", kind)
		}
	}
}

// TestWithdrawnWhenAskingEnds: a request whose hook ctx ends before the
// person answers is withdrawn on the stream, with the request's id and
// why, and an answer posted afterwards is refused.
func TestWithdrawnWhenAskingEnds(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc) // the hook's ctx and how the server cancels it
		want string
	}{
		{"the server cancels it", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, "the server cancelled it"},
		// The hook's 10-minute cap, shortened; it ends on its own.
		{"the hook's cap", func() (context.Context, context.CancelFunc) {
			ctx, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
			context.AfterFunc(ctx, stop)
			return ctx, func() {}
		}, "timed out after 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &lineRecorder{header: http.Header{}, lines: make(chan api.AttachLine, 8)}
			g := &attachGroup{members: []attachMember{newStreamAttachment(context.Background(), rec, false)}}
			ctx, cancel := tt.ctx()
			errc := make(chan error, 1)
			go func() {
				_, err := g.Elicit(ctx, "ev", &mcp.ElicitParams{Message: "colour?"})
				errc <- err
			}()
			asked := nextLine(t, rec.lines, api.AttachElicit)
			cancel()
			w := nextLine(t, rec.lines, api.AttachWithdrawn)
			if w.ID != asked.ID || w.Reason != tt.want {
				t.Errorf("withdrawn line %+v; want id %s and reason %q", w, asked.ID, tt.want)
			}
			if err := <-errc; !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Elicit returned %v; want the ctx's error", err)
			}
			if _, ok := pendingAnswers.Load(asked.ID); ok {
				t.Error("a withdrawn request still takes answers")
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Minute, "10m"},
		{10*time.Minute - time.Millisecond, "10m"},
		{90 * time.Second, "1m30s"},
		{2 * time.Hour, "2h"},
		{45 * time.Second, "45s"},
	} {
		if got := shortDuration(tt.d); got != tt.want {
			t.Errorf("shortDuration(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
}

// TestWithdrawnWhenTheCallEnds: the fixture server asks for a form during
// a call; when that call is cancelled (its client gave up) or interrupted
// (`nerve node interrupt`), the server withdraws the request and the
// attach stream says so: "the call ended".
func TestWithdrawnWhenTheCallEnds(t *testing.T) {
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
	s := c.Session("default")
	ctx := t.Context()
	if _, err := s.Add(ctx, node.Spec{ID: "fx", Kind: mcpnode.Kind, Command: []string{server}}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Attach(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	lines := make(chan api.AttachLine, 8)
	go func() {
		defer close(lines)
		for {
			l, err := a.Next()
			if err != nil {
				return
			}
			lines <- l
		}
	}()

	for _, tt := range []struct {
		name string
		end  func(cancel context.CancelFunc) error
	}{
		{"the caller cancels", func(cancel context.CancelFunc) error { cancel(); return nil }},
		{"nerve node interrupt", func(context.CancelFunc) error { return s.Interrupt(ctx, "fx") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := s.Call(cctx, "fx", "elicit", json.RawMessage(`{"message":"Which colour?"}`), nil)
				done <- err
			}()
			asked := nextLine(t, lines, api.AttachElicit)
			if !strings.Contains(string(asked.Params), "Which colour?") {
				t.Errorf("the request asks %s", asked.Params)
			}
			if err := tt.end(cancel); err != nil {
				t.Fatal(err)
			}
			w := nextLine(t, lines, api.AttachWithdrawn)
			if w.ID != asked.ID || w.Reason != "the call ended" {
				t.Errorf("withdrawn line %+v; want id %s, reason %q", w, asked.ID, "the call ended")
			}
			if err := <-done; err == nil {
				t.Error("the ended call succeeded")
			}
			err := a.Answer(ctx, asked.ID, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "teal"}}, nil)
			if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
				t.Errorf("answering a withdrawn request: %v; want 404, no request waits", err)
			}
		})
	}
}

// stalledWriter is an attach stream's client that stopped reading: every
// write blocks until release is closed.
type stalledWriter struct {
	header  http.Header
	release chan struct{}
}

func (c *stalledWriter) Header() http.Header { return c.header }
func (c *stalledWriter) WriteHeader(int)     {}
func (c *stalledWriter) Flush()              {}
func (c *stalledWriter) Write(b []byte) (int, error) {
	<-c.release
	return len(b), nil
}

// TestAttachStreamNeverBlocksTheNode: a resource's news reaches an attach
// stream from the node's delivery goroutine; a REPL suspended with Ctrl-Z
// (its stream no longer read) must not hold that goroutine up.
func TestAttachStreamNeverBlocksTheNode(t *testing.T) {
	w := &stalledWriter{header: http.Header{}, release: make(chan struct{})}
	a := newStreamAttachment(context.Background(), w, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10000 {
			a.resourceUpdated(fmt.Sprintf("file:///r%d", i))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("telling a stalled stream of updated resources blocked the caller")
	}
	close(w.release)
	a.q.Close()
}
