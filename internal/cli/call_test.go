package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// countingConn counts the HTTP requests a client writes on it.
type countingConn struct {
	net.Conn
	n *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	for _, m := range []string{"GET /", "POST /", "PUT /", "DELETE /"} {
		if bytes.HasPrefix(p, []byte(m)) {
			c.n.Add(1)
		}
	}
	return c.Conn.Write(p)
}

// TestCallIsOneRequest: `nerve call` makes one request to the daemon,
// whatever the line — a call, help, a misspelt key — and prints what it
// printed when it asked for the node's tools first.
func TestCallIsOneRequest(t *testing.T) {
	ctx := context.Background()
	emb, err := daemon.StartEmbedded(ctx, &daemon.Options{Registry: all.Registry(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close(context.Background()) })
	var n atomic.Int32
	c := client.New(client.Options{Dial: func(ctx context.Context) (net.Conn, error) {
		conn, err := emb.Dial(ctx)
		return countingConn{conn, &n}, err
	}})
	t.Cleanup(func() { c.Close() })
	if _, err := c.Session("default").Add(ctx, node.Spec{ID: "id", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		argv           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"call", "@id", "identity", "text=hi"}, 0, "hi\n", ""},
		{[]string{"call", "@id", "identity", "text=a b"}, 0, "a b\n", ""},
		{[]string{"call", "@id", "some", "words"}, 0, "some words\n", ""},
		{[]string{"call", "@id.identity", "tex=hi"}, ExitUsage, "", "did you mean text?"},
		{[]string{"call", "@id", "identity", `{"text":5}`}, ExitUsage, "", "text"},
		{[]string{"call", "@ib", "x"}, ExitUsage, "", `did you mean "id"`},
		{[]string{"call", "@id", "?"}, 0, "nerve call @id", ""},
		{[]string{"call", "@id", "identity", "?"}, 0, "Parameters:", ""},
	} {
		name := strings.Join(tt.argv, " ")
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Client: c, Getenv: func(string) string { return "" }}
		n.Store(0)
		code := ExitCode(&errb, Exec(ctx, env, tt.argv))
		if code != tt.code {
			t.Errorf("nerve %s: exit %d; want %d (stderr %q)", name, code, tt.code, errb.String())
		}
		if !strings.Contains(out.String(), tt.stdout) {
			t.Errorf("nerve %s: stdout %q; want %q", name, out.String(), tt.stdout)
		}
		if !strings.Contains(errb.String(), tt.stderr) {
			t.Errorf("nerve %s: stderr %q; want it to contain %q", name, errb.String(), tt.stderr)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("nerve %s: %d requests to the daemon; want 1", name, got)
		}
	}
}

// TestCallOlderDaemon: a daemon from before call lines refuses the
// "line" field; nerve call then asks for the tools and parses the line
// itself, as it did then.
func TestCallOlderDaemon(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions/default/nodes/id/call", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"line"`) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":"bad_request","message":"decoding the request: json: unknown field \"line\""}}`)
			return
		}
		if !strings.Contains(string(body), `"tool":"identity"`) || !strings.Contains(string(body), `"text":"hi"`) {
			t.Errorf("call body %s", body)
		}
		io.WriteString(w, `{"kind":"result","result":{"content":[{"type":"text","text":"hi"}]}}`+"\n")
	})
	mux.HandleFunc("GET /v1/sessions/default/nodes/id/tools", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `[{"name":"identity","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	c := client.New(client.Options{Dial: func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}})
	t.Cleanup(func() { c.Close() })
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Client: c, Getenv: func(string) string { return "" }}
	code := ExitCode(&errb, Exec(context.Background(), env, []string{"call", "@id", "identity", "text=hi"}))
	if code != 0 || out.String() != "hi\n" {
		t.Errorf("nerve call against an older daemon: exit %d, stdout %q, stderr %q; want 0 and hi", code, out.String(), errb.String())
	}
}
