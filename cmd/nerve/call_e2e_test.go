//go:build linux

package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
)

// TestCallPrints: `nerve call` prints what a person checks — the answer
// on stdout, progress, a graph's steps and errors on stderr, an exit
// code that says how it ended — for text, images, structured content,
// help, mistakes and graphs, each through the one request in which the
// daemon parses the line.
func TestCallPrints(t *testing.T) {
	h := newHome(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	h.must("node", "add", "mcp", "fx", "--", server)
	h.must("node", "add", "identity", "id")
	graph := filepath.Join(h.home, "g.yaml")
	os.WriteFile(graph, []byte("inputs: {t: string}\nsteps:\n  a: {call: id.identity, args: {text: \"${inputs.t}\"}}\n"), 0o600)
	h.must("graph", "add", "g", "--from", graph)
	attachment := regexp.MustCompile(`/[^ \n]*nerve-call-[^/ \n]*/`)
	duration := regexp.MustCompile(`\b[0-9.]+(µs|ms|s)\b`) // a graph step's time
	for _, tc := range []struct {
		words  []string
		stdout string // "…" at the end: the start of stdout
		stderr string
		code   int
	}{
		{[]string{"@id", "identity", "text=hi"}, "hi\n", "", 0},
		{[]string{"@id", "identity", "text=two\nlines\n"}, "two\nlines\n", "", 0},
		{[]string{"@id", "identity", "text="}, "", "", 0},
		{[]string{"@id", "a   b"}, "a   b\n", "", 0},
		{[]string{"@fx", "echo", "text=héllo ✓"}, "héllo ✓\n", "", 0},
		{[]string{"@fx", "slow", "ms=30", "steps=3"}, "done in 3 steps\n", "@fx: 1/3 step 1 of 3\n@fx: 2/3 step 2 of 3\n@fx: 3/3 step 3 of 3\n", 0},
		{[]string{"@fx", "fail"}, "", "error: failed on purpose\n", 3},
		{[]string{"@fx", "fail", "message=it broke"}, "", "error: it broke\n", 3},
		{[]string{"@fx", "image"}, "[image, image/png, 116 B: /TMP/image-1.png]\n", "", 0},
		{[]string{"@fx", "structured", "text=a b c"}, "{\n  \"length\": 5,\n  \"text\": \"a b c\",\n  \"upper\": \"A B C\",\n  \"words\": 3\n}\n", "", 0},
		{[]string{"@fx", "resource_link"}, "→ hello fixture://text/hello (read it with resources/read, text/plain)\n", "", 0},
		{[]string{"@fx", "embedded_resource"}, "[resource fixture://text/hello (text/plain)]\nhello from the nerve fixture\n", "", 0},
		{[]string{"@fx", "?"}, "@fx: 13 tools\n  add_tool …", "", 0},
		{[]string{"@fx", "echo", "?"}, "@fx echo\n  Returns text unchanged.\n…", "", 0},
		{[]string{"@fx", "ehco", "text=x"}, "", "nerve: unknown tool \"ehco\" on @fx — did you mean echo? `nerve call @fx ?` lists its tools\n", 2},
		{[]string{"@fx", "echo", "txet=x"}, "", "nerve: unknown argument \"txet\" for @fx echo — did you mean text? `nerve call @fx echo ?` lists its parameters\n", 2},
		{[]string{"@nosuch", "x"}, "", "nerve: no node \"nosuch\" (nodes: bash, fx, id, g)\n", 2},
		{[]string{"@id", "identity"}, "", "nerve: missing required argument \"text\" (string) — add text=TEXT, or see `nerve call @id identity ?` (nothing came on stdin either)\n", 2},
		{[]string{"@g", "t=hi"}, "hi\n", "@g ▸ a started\n@g ✓ a D\n", 0},
	} {
		cmd := h.cmd(append([]string{"call"}, tc.words...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errb, strings.NewReader("")
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("nerve call %v: %v", tc.words, err)
			}
			code = ee.ExitCode()
		}
		stdout := attachment.ReplaceAllString(out.String(), "/TMP/")
		stderr := duration.ReplaceAllString(errb.String(), "D")
		wantOut, prefix := strings.CutSuffix(tc.stdout, "…")
		if code != tc.code || stderr != tc.stderr || !prefix && stdout != wantOut || prefix && (!strings.HasPrefix(stdout, wantOut) || stdout == wantOut) {
			t.Errorf("nerve call %q:\ngot  exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", tc.words, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestCallInterrupted sends SIGINT to `nerve call` while the call runs
// (Ctrl-C): the call is cancelled in the daemon, the message names the
// call, and the node answers the next call.
func TestCallInterrupted(t *testing.T) {
	h := newHome(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	h.must("node", "add", "mcp", "fx", "--", server)
	cmd := h.cmd("call", "@fx", "slow", "ms=60000", "steps=600")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stderr)
	first, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "@fx: ") {
		t.Fatalf("first line on stderr %q, %v; want a progress line", first, err)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	var rest strings.Builder
	for {
		l, err := r.ReadString('\n')
		rest.WriteString(l)
		if err != nil {
			break
		}
	}
	err = cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 130 { // 128 + SIGINT, as a shell's job (issue 27)
		t.Errorf("exit: %v; want 130", err)
	}
	want := "nerve: interrupted: the call to @fx slow was cancelled (the node was told)\n"
	if got := rest.String(); !strings.HasSuffix(got, want) {
		t.Errorf("stderr after SIGINT %q; want it to end %q", got, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("nerve call ended %v after SIGINT", d)
	}
	if out := h.must("call", "@fx", "echo", "text=after"); out != "after\n" {
		t.Errorf("next call: %q", out)
	}
}

// TestCallOlderDaemon: a daemon from before call lines (it refuses the
// "line" field) is still answered: nerve asks for the tools, parses the
// line and calls, as nerve did then, and never sends the refused request
// again.
func TestCallOlderDaemon(t *testing.T) {
	h := newHome(t)
	if err := os.MkdirAll(filepath.Dir(h.p.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", h.p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set(api.HeaderVersion, "v0.9.0")
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/version":
			json.NewEncoder(w).Encode(api.VersionInfo{Version: "v0.9.0", APIVersion: api.Version, PID: os.Getpid()})
		case r.Method == "POST" && r.URL.Path == "/v1/sessions/default/nodes/id/call" && strings.Contains(string(body), `"line"`):
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":"bad_request","message":"decoding the request: json: unknown field \"line\""}}`)
		case r.Method == "POST" && r.URL.Path == "/v1/sessions/default/nodes/id/call":
			io.WriteString(w, `{"kind":"result","result":{"content":[{"type":"text","text":"hi from before"}]}}`+"\n")
		case r.Method == "GET" && r.URL.Path == "/v1/sessions/default/nodes/id/tools":
			io.WriteString(w, `[{"name":"identity","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]`)
		default:
			http.NotFound(w, r)
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	out, errs, code := h.run("call", "@id", "identity", "text=hi")
	if code != 0 || out != "hi from before\n" {
		t.Errorf("nerve call against an older daemon: exit %d, stdout %q, stderr %q; want 0 and the old daemon's answer", code, out, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	lines := 0
	for _, s := range seen {
		if strings.Contains(s, `"line"`) {
			lines++
		}
	}
	if lines != 1 || len(seen) != 3 {
		t.Errorf("requests with a line: %d; want 1 (never sent again) of 3 (line, tools, call):\n%s", lines, strings.Join(seen, "\n"))
	}
}
