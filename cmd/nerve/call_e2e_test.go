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

// TestFrontCallsAsTheCoreDoes runs each line with `nerve call` (the front)
// and with `nerve-core call` (the whole program, no front) against the
// same daemon: stdout, stderr and the exit code are the same. The lines
// the front answers by itself still answer with NERVE_CORE naming no
// program; every other line reaches the core (so with NERVE_CORE naming
// none it fails saying so).
func TestFrontCallsAsTheCoreDoes(t *testing.T) {
	h := newHome(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	h.must("node", "add", "mcp", "fx", "--", server)
	h.must("node", "add", "identity", "id")
	graph := filepath.Join(h.home, "g.yaml")
	os.WriteFile(graph, []byte("inputs: {t: string}\nsteps:\n  a: {call: id.identity, args: {text: \"${inputs.t}\"}}\n"), 0o600)
	h.must("graph", "add", "g", "--from", graph)
	core := filepath.Join(filepath.Dir(h.bin), "nerve-core")
	attachment := regexp.MustCompile(`/[^ \n]*nerve-call-[^/ \n]*/`)
	duration := regexp.MustCompile(`\b[0-9.]+(µs|ms|s)\b`) // a graph step's time
	run := func(bin string, extraEnv []string, words ...string) (string, string, int) {
		t.Helper()
		orig := h.bin
		h.bin = bin
		defer func() { h.bin = orig }()
		cmd := h.cmd(append([]string{"call"}, words...)...)
		cmd.Env = append(cmd.Env, extraEnv...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Stdin = strings.NewReader("")
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("nerve call %v: %v", words, err)
			}
			code = ee.ExitCode()
		}
		return attachment.ReplaceAllString(out.String(), "/TMP/"), duration.ReplaceAllString(errb.String(), "D"), code
	}
	noCore := []string{"NERVE_CORE=" + filepath.Join(h.home, "no-such-core")}
	for _, tc := range []struct {
		words []string
		alone bool // the front answers without the core
	}{
		{[]string{"@id", "identity", "text=hi"}, true},
		{[]string{"@id", "identity", "text=two\nlines\n"}, true},
		{[]string{"@id", "identity", "text="}, true},
		{[]string{"@id", "a   b"}, true},
		{[]string{"@fx", "echo", "text=héllo ✓"}, true},
		{[]string{"@fx", "slow", "ms=30", "steps=3"}, true},
		{[]string{"@fx", "log", "level=warning", "message=careful"}, true},
		{[]string{"@fx", "fail"}, true},
		{[]string{"@fx", "fail", "message=it broke"}, true},
		{[]string{"@fx", "image"}, false},
		{[]string{"@fx", "structured", "text=a b c"}, false},
		{[]string{"@fx", "resource_link"}, false},
		{[]string{"@fx", "embedded_resource"}, false},
		{[]string{"@fx", "?"}, false},
		{[]string{"@fx", "echo", "?"}, false},
		{[]string{"@fx", "ehco", "text=x"}, false},
		{[]string{"@fx", "echo", "txet=x"}, false},
		{[]string{"@nosuch", "x"}, false},
		{[]string{"@id", "identity"}, false},
		{[]string{"@g", "t=hi"}, false},
	} {
		name := strings.Join(tc.words, " ")
		fo, fe, fc := run(h.bin, nil, tc.words...)
		co, ce, cc := run(core, nil, tc.words...)
		if fo != co || fe != ce || fc != cc {
			t.Errorf("nerve call %s:\nfront: exit %d, stdout %q, stderr %q\ncore:  exit %d, stdout %q, stderr %q", name, fc, fo, fe, cc, co, ce)
			continue
		}
		ao, ae, ac := run(h.bin, noCore, tc.words...)
		switch {
		case tc.alone && (ao != fo || ae != fe || ac != fc):
			t.Errorf("nerve call %s without the core: exit %d, stdout %q, stderr %q; want what it printed with it", name, ac, ao, ae)
		case !tc.alone && (ac != 1 || !strings.Contains(ae, "NERVE_CORE names nerve-core")):
			t.Errorf("nerve call %s without the core: exit %d, stdout %q, stderr %q; want the core's absence said", name, ac, ao, ae)
		}
	}
}

// TestFrontInterruptedCall sends SIGINT to `nerve call` while the call
// runs: the call is cancelled in the daemon, the message names the call
// as the core's does, and the node answers the next call.
func TestFrontInterruptedCall(t *testing.T) {
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
	if ee == nil || ee.ExitCode() != 1 {
		t.Errorf("exit: %v; want 1", err)
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

// TestFrontBuildsTheCoreFromItsCheckout: a front with no nerve-core beside
// it (what `go run ./cmd/nerve` builds) builds the core from the checkout
// it was built from into the user's cache, and runs it; the second run
// finds it built.
func TestFrontBuildsTheCoreFromItsCheckout(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	front := filepath.Join(dir, "nerve")
	// -buildvcs=auto: in a git checkout Go stamps the module version
	// (v0.0.0-DATE-REV+dirty), as it does for people; it must not stop
	// the front from taking the checkout for one.
	build := exec.Command(goBin, "build", "-buildvcs=auto", "-o", front, "./cmd/nerve")
	build.Dir = testutil.RepoRoot(t)
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cache := t.TempDir()
	// The go command's own caches stay where they are: a cold build cache
	// makes the core's build take minutes, a new module cache a download.
	goEnv, err := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	vals := strings.Split(strings.TrimSpace(string(goEnv)), "\n")
	if len(vals) != 3 {
		t.Fatalf("go env: %q", goEnv)
	}
	env := append(os.Environ(), "XDG_CACHE_HOME="+cache, "HOME="+t.TempDir(), "NERVE_CORE=",
		"GOCACHE="+vals[0], "GOMODCACHE="+vals[1], "GOPATH="+vals[2])
	for i := range 2 {
		cmd := exec.Command(front, "version")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "nerve ") {
			t.Fatalf("run %d: nerve version: %v\n%s", i, err, out)
		}
	}
	cores, _ := filepath.Glob(filepath.Join(cache, "nerve", "core-*", "nerve-core"))
	if len(cores) != 1 {
		t.Errorf("cores built in the cache: %v; want one", cores)
	}
	// Without the go command it says what is missing and how to fix it.
	os.RemoveAll(filepath.Join(cache, "nerve"))
	cmd := exec.Command(front, "version")
	cmd.Env = append(env, "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs the go command") {
		t.Errorf("without go: %v, %q; want it to say the go command is needed", err, out)
	}
}

// TestFrontLinksLittle keeps the front small: it must not link the daemon,
// the node kinds, the MCP SDK, net/http or the other heavy packages whose
// start-up a one-shot call would pay (docs/performance.md).
func TestFrontLinksLittle(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/nerve-dev/nerve/cmd/nerve").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"net/http", "crypto/tls", "modelcontextprotocol", "jsonschema", "go.uber.org/zap", "yaml", "encoding/gob", "github.com/nerve-dev/nerve/pkg/session", "github.com/nerve-dev/nerve/internal/cli", "github.com/nerve-dev/nerve/internal/daemon", "github.com/chzyer/readline"} {
			if strings.Contains(dep, banned) {
				t.Errorf("the front links %s", dep)
			}
		}
	}
}

// TestFrontOlderDaemon: a daemon from before call lines (it refuses the
// "line" field) is still answered through the front: the front hands its
// 400 to the core, which asks for the tools, parses the line and calls, as
// nerve did then, without sending the refused request again.
func TestFrontOlderDaemon(t *testing.T) {
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
		t.Errorf("requests with a line: %d; want 1 (the front's, never sent again) of 3 (line, tools, call):\n%s", lines, strings.Join(seen, "\n"))
	}
}
