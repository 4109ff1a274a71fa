//go:build linux

package main_test

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestCallLog: every call lands in the call log; `nerve log` shows it and
// `nerve log --follow` shows calls as they are made.
func TestCallLog(t *testing.T) {
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	h.must("node", "add", "bash", "sh")
	h.must("call", "@echo", "first call")
	_, _, code := h.run("call", "@sh", "(exit 3)")
	if code != 3 {
		t.Fatalf("a call whose tool reported an error exited %d, want 3", code)
	}

	out := h.must("log")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("nerve log shows %d lines, want 2 (one per call):\n%s", len(lines), out)
	}
	if !strings.Contains(lines[0], "default @echo identity") || !strings.Contains(lines[0], `"first call"`) || !strings.Contains(lines[0], " ok → first call") {
		t.Errorf("first line %q lacks session, node, tool, arguments or status", lines[0])
	}
	if !strings.Contains(lines[1], "@sh bash") || !strings.Contains(lines[1], "isError") {
		t.Errorf("second line %q does not say the tool reported an error", lines[1])
	}
	if one := h.must("log", "-n", "1"); strings.Count(one, "\n") != 1 {
		t.Errorf("nerve log -n 1 shows %q", one)
	}

	follow := h.cmd("log", "--follow", "-n", "0")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follow.Process.Kill(); follow.Wait() })
	var mu sync.Mutex
	var seen []string
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			seen = append(seen, sc.Text())
			mu.Unlock()
		}
	}()
	h.must("call", "@echo", "followed")
	testutil.WaitFor(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range seen {
			if strings.Contains(l, `"followed"`) {
				return true
			}
		}
		return false
	}, "nerve log --follow to show the new call")
}

// TestCallLogCallers: calls made through `nerve mcp serve` (a Go SDK
// client), by a graph's step, by `nerve call` and in the REPL are each
// logged once,
// with who made them (issue 22, item 9).
func TestCallLogCallers(t *testing.T) {
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	def := filepath.Join(h.home, "g.yaml")
	if err := os.WriteFile(def, []byte("steps:\n  say: {call: echo.identity, args: {text: from graph}}\noutput: \"${steps.say.text}\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.must("graph", "add", "g", "--from", def)
	h.must("call", "@echo", "from cli")
	h.must("call", "@g", "run")

	c := mcp.NewClient(&mcp.Implementation{Name: "log-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: h.cmd("mcp", "serve")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.identity", Arguments: map[string]any{"text": "from mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("call through nerve mcp serve: %v %v", err, res)
	}
	cs.Close()

	term := repl(t, h.home)
	term.Line("@echo from repl")
	term.WaitFor("[1] @echo identity", 20*time.Second)
	term.Keys("C-d")

	var recs []daemon.CallRecord
	for _, line := range strings.Split(strings.TrimSpace(h.must("log", "--json", "-n", "0")), "\n") {
		var r daemon.CallRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a line of nerve log --json: %v: %s", err, line)
		}
		recs = append(recs, r)
	}
	type key struct{ node, tool, args, caller string }
	got := map[key]int{}
	for _, r := range recs {
		caller := "none"
		if r.Caller != nil {
			caller = r.Caller.Kind + ":" + r.Caller.Name + ":" + r.Caller.Via + ":" + r.Caller.Step
			if r.Caller.Kind == node.CallerGraph && r.Caller.Run == "" {
				t.Errorf("a graph step's call has no run id: %+v", *r.Caller)
			}
		}
		got[key{r.Node, r.Tool, string(r.Args), caller}]++
	}
	want := map[key]int{
		{"echo", "identity", `{"text":"from cli"}`, "cli:::"}:              1,
		{"g", "run", `{}`, "cli:::"}:                                       1,
		{"echo", "identity", `{"text":"from graph"}`, "graph:g::say"}:      1,
		{"echo", "identity", `{"text":"from mcp"}`, "mcp:log-test:stdio:"}: 1,
		{"echo", "identity", `{"text":"from repl"}`, "repl:::"}:            1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("nerve log --json has %v, want each call once with its caller: %v", got, want)
	}
	text := h.must("log", "-n", "0")
	for _, c := range []string{"cli default @echo", "graph:g/say default @echo", "mcp:log-test default @echo"} {
		if !strings.Contains(text, c) {
			t.Errorf("nerve log lacks %q:\n%s", c, text)
		}
	}
}
