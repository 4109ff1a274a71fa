//go:build linux

package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// refusals are messages nerve refuses, each with the id its error carries
// and words of the error.
func refusals() []struct{ name, line, id, want string } {
	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo.identity","arguments":` + args + `}}`
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	return []struct{ name, line, id, want string }{
		{"args 1,001 deep", call("2", deep(1001)), "2", "nests 1003 levels deep, over nerve's limit of 1000 levels"},
		{"args 100,000 deep", call("3", deep(100_000)), "3", "nests 100002 levels deep"},
		{"10 MB of [", call("4", strings.Repeat("[", 10<<20)), "4", "over nerve's limit of 1000 levels"},
		{"a 20 MB string", call("5", `{"text":"`+strings.Repeat("x", 20<<20)+`"}`), "5", "over nerve's limit of 16 MB"},
		{"garbage", "garbage, not JSON", "null", "parse error"},
	}
}

// errorOf decodes a JSON-RPC error response.
func errorOf(t *testing.T, name string, b []byte) (id, msg string) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct{ Message string }
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Error.Message == "" {
		t.Errorf("%s: answer %.300q, want a JSON-RPC error", name, b)
	}
	return string(r.ID), r.Error.Message
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestBinaryServeRefusals: through the real `nerve mcp serve` and the real
// HTTP endpoint, arguments nested 1,001 and 100,000 deep, 10 MB of "[", a
// 20 MB string and a line of garbage each get a JSON-RPC error carrying
// their id, and a call on the same session afterwards is answered. Before
// (issue 27 item 2), the first deep request ended the stdio session with
// no answer, and the endpoint answered plain text.
func TestBinaryServeRefusals(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")

	t.Run("stdio", func(t *testing.T) {
		cmd := n.Command("mcp", "serve")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { in.Close(); cmd.Wait() }()
		answers, done := make(chan []byte), make(chan struct{})
		defer close(done)
		go func() {
			defer close(answers)
			br := bufio.NewReaderSize(out, 1<<20)
			for {
				b, err := br.ReadBytes('\n')
				if err != nil {
					return
				}
				select {
				case answers <- b:
				case <-done:
					return
				}
			}
		}()
		send := func(line string) {
			t.Helper()
			if _, err := io.WriteString(in, line+"\n"); err != nil {
				t.Fatalf("the session ended: %v", err)
			}
		}
		next := func() []byte {
			t.Helper()
			select {
			case b, ok := <-answers:
				if !ok {
					t.Fatal("the session ended with no answer")
				}
				return b
			case <-time.After(time.Minute):
				t.Fatal("no answer within a minute")
				return nil
			}
		}
		send(initLine)
		next()
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, r := range refusals() {
			send(r.line)
			if id, msg := errorOf(t, r.name, next()); id != r.id || !strings.Contains(msg, r.want) {
				t.Errorf("%s: error for id %s %q, want id %s and %q", r.name, id, msg, r.id, r.want)
			}
		}
		send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo.identity","arguments":{"text":"still here"}}}`)
		if b := next(); !strings.Contains(string(b), `"id":9`) || !strings.Contains(string(b), "still here") {
			t.Errorf("a call after the refusals: %s", b)
		}
	})

	t.Run("http", func(t *testing.T) {
		f := strings.Fields(n.Must("mcp", "url"))
		url, token := f[0], f[1]
		client := &http.Client{Timeout: time.Minute}
		post := func(body, session string) *http.Response {
			t.Helper()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		resp := post(initLine, "")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		session := resp.Header.Get("Mcp-Session-Id")
		if session == "" {
			t.Fatalf("initialize: %s, no session", resp.Status)
		}
		post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session).Body.Close()
		for _, r := range refusals() {
			resp := post(r.line, session)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: %s %q %.200q, want a JSON-RPC error", r.name, resp.Status, ct, b)
				continue
			}
			if id, msg := errorOf(t, r.name, b); id != r.id || !strings.Contains(msg, r.want) {
				t.Errorf("%s: error for id %s %q, want id %s and %q", r.name, id, msg, r.id, r.want)
			}
		}
		resp = post(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo.identity","arguments":{"text":"still here"}}}`, session)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "still here") {
			t.Errorf("a call after the refusals: %s %s", resp.Status, b)
		}
	})
}
