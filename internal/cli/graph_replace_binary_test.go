//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
)

// plainAPI is a client of the daemon's local API that is not nerve's:
// HTTP over its Unix socket, JSON in and out.
type plainAPI struct {
	t    *testing.T
	http *http.Client
}

func newPlainAPI(t *testing.T, n *realNerve) *plainAPI {
	t.Helper()
	m := regexp.MustCompile(`(?m)^socket: +(\S+)`).FindStringSubmatch(n.Must("daemon", "status"))
	if m == nil {
		t.Fatal("`nerve daemon status` names no socket")
	}
	return &plainAPI{t: t, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", m[1])
		},
	}}}
}

// do sends method path with body as JSON and returns the status and the
// body, decoded into out when it is an answer and not an error.
func (c *plainAPI) do(method, path string, body, out any) (int, api.Error) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://nerve/v1"+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e api.ErrorBody
		if err := json.Unmarshal(data, &e); err != nil {
			c.t.Fatalf("%s %s: status %d, body %s", method, path, resp.StatusCode, data)
		}
		return resp.StatusCode, e.Error
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.StatusCode, api.Error{}
}

func graphNodeSpec(id, src string) map[string]any {
	return map[string]any{"id": id, "kind": "graph", "options": map[string]any{"source": src}}
}

// TestBinaryGraphChecksHoldForEveryClient: a program on the local API
// that adds a graph with a misspelt tool or a cycle through another graph
// gets the report `nerve graph add` prints, place for place (the CLI only
// names the file); a replace with mistakes changes nothing, and the old
// graph goes on running (issue 17, item 10).
func TestBinaryGraphChecksHoldForEveryClient(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	good := "steps:\n  a: {call: echo.identity, args: {text: fine}}\n"
	c := newPlainAPI(t, n)
	if status, e := c.do("POST", "/sessions/default/nodes", graphNodeSpec("g", good), nil); status != http.StatusCreated {
		t.Fatalf("adding a good graph over the API: %d %v", status, e)
	}
	n.Must("graph", "add", "outer", "--from", writeFile(t, filepath.Join(n.home, "outer.yaml"), "steps:\n  a: {call: g.run}\n"))
	for _, tt := range []struct{ name, src string }{
		{"typo", "steps:\n  a: {call: echo.identiy, args: {text: x}}\n  b: {call: echo.identity, args: {txet: x}}\n"},
		{"cycle", "steps:\n  a: {call: echo.identity, args: {text: \"${steps.b.text}\"}}\n  b: {call: echo.identity, args: {text: \"${steps.a.text}\"}}\n"},
	} {
		file := writeFile(t, filepath.Join(n.home, tt.name+".yaml"), tt.src)
		_, cliErr, code := n.Run("graph", "add", tt.name, "--from", file)
		if code != ExitUsage {
			t.Errorf("nerve graph add %s: exit %d, want %d", tt.name, code, ExitUsage)
		}
		status, e := c.do("POST", "/sessions/default/nodes", graphNodeSpec(tt.name, tt.src), nil)
		if status != http.StatusBadRequest || e.Code != api.CodeBadRequest {
			t.Errorf("POST graph %s: %d %s, want 400 bad_request", tt.name, status, e.Code)
		}
		want := "nerve: " + regexp.MustCompile(`(?m)^  (\d+:\d+: )`).ReplaceAllString(e.Message, "  "+file+":$1") + "\n"
		if !strings.Contains(e.Message, "graph "+tt.name+" has mistakes:\n  ") || cliErr != want {
			t.Errorf("graph %s: the API's report\n%s\nand the CLI's\n%s\ndiffer but for the file's name", tt.name, e.Message, cliErr)
		}
		if status, _ := c.do("GET", "/sessions/default/nodes/"+tt.name, nil, nil); status != http.StatusNotFound {
			t.Errorf("graph %s with mistakes was added (GET answers %d)", tt.name, status)
		}
	}

	// A replace with mistakes leaves the old graph as it was, and running.
	status, e := c.do("PUT", "/sessions/default/nodes/g", graphNodeSpec("g", "steps:\n  a: {call: echo.identiy, args: {text: x}}\n"), nil)
	if status != http.StatusBadRequest || !strings.Contains(e.Message, "2:13: step a calls echo.identiy: no such tool; did you mean echo.identity?") {
		t.Errorf("PUT a graph with a misspelt tool: %d %q", status, e.Message)
	}
	status, e = c.do("PUT", "/sessions/default/nodes/g", graphNodeSpec("g", "steps:\n  a: {call: outer.run}\n"), nil)
	if status != http.StatusBadRequest || !strings.Contains(e.Message, "step a calls graph outer, which calls back: g → outer → g") {
		t.Errorf("PUT a graph that calls back into itself: %d %q", status, e.Message)
	}
	if got := n.Must("graph", "export", "g"); got != good {
		t.Errorf("after refused replaces, graph g is\n%s\nwant it untouched:\n%s", got, good)
	}
	var detail api.NodeDetail
	c.do("GET", "/sessions/default/nodes/g", nil, &detail)
	if detail.Info.State.String() != "READY" {
		t.Errorf("after refused replaces, graph g is %s, want READY", detail.Info.State)
	}
	if got := n.Must("call", "@g", "run"); got != "fine\n" {
		t.Errorf("@g run after refused replaces printed %q", got)
	}

	// A good replace over the API answers with the new node and its warnings.
	var resp api.NodeResponse
	down := "inputs: {cmd: string}\nsteps:\n  a: {call: echo.identity, args: {text: new}}\n  b: {call: bash.bash, args: {command: \"eval ${inputs.cmd}\"}, unsafe_shell: true}\n"
	if status, e := c.do("PUT", "/sessions/default/nodes/g", graphNodeSpec("g", down), &resp); status != http.StatusOK {
		t.Fatalf("PUT a good graph: %d %v", status, e)
	}
	if resp.Info.Summary != "2 steps" || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "4:3: step b: unsafe_shell: nerve does not refuse its values where they can run as code in bash.bash") {
		t.Errorf("PUT a good graph answered %+v", resp)
	}
	if got := n.Must("graph", "export", "g"); got != down {
		t.Errorf("after the replace, graph g is\n%s", got)
	}
}

// TestBinaryGraphEditSurvivesDaemonKill kills the daemon (SIGKILL) the
// moment `nerve graph edit` first changes the session's state file, then
// at once after the edit begins, and restarts it: the graph comes back,
// with the old definition or the new one, never neither (issue 17, item
// 10). An edit done as a remove and then an add lost the graph here.
func TestBinaryGraphEditSurvivesDaemonKill(t *testing.T) {
	n := newRealNerve(t)
	defs := [2]string{
		filepath.Join(n.home, "a.yaml"),
		filepath.Join(n.home, "b.yaml"),
	}
	srcs := [2]string{
		"steps:\n  a: {call: echo.identity, args: {text: old}}\n",
		"steps:\n  b: {call: echo.identity, args: {text: new}}\n",
	}
	for i := range defs {
		writeFile(t, defs[i], srcs[i])
	}
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "g", "--from", defs[0])
	state := filepath.Join(n.home, "sessions", "default.json")
	pidOf := regexp.MustCompile(`pid (\d+)`)

	cur := 0
	for round := range 6 {
		m := pidOf.FindStringSubmatch(n.Must("daemon", "status"))
		if m == nil {
			t.Fatal("`nerve daemon status` names no pid")
		}
		pid, _ := strconv.Atoi(m[1])
		before, err := os.Stat(state)
		if err != nil {
			t.Fatal(err)
		}
		next := 1 - cur
		edit := n.Command("graph", "edit", "g", "--from", defs[next])
		if err := edit.Start(); err != nil {
			t.Fatal(err)
		}
		if round%2 == 0 {
			// The moment the edit first touches the state file.
			deadline := time.Now().Add(time.Minute)
			for {
				fi, err := os.Stat(state)
				if err == nil && !os.SameFile(fi, before) { // saved: renamed over the old file
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: the edit never changed %s", round, state)
				}
			}
		} else {
			// Somewhere in the edit's first milliseconds.
			time.Sleep(time.Duration(round) * time.Millisecond)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		edit.Wait()

		// The next command starts a new daemon, which restores the session.
		out, errs, code := n.Run("graph", "export", "g")
		switch {
		case code == 0 && out == srcs[next]:
			cur = next
		case code == 0 && out == srcs[cur]:
		default:
			t.Fatalf("round %d: after the daemon was killed during `graph edit`, `nerve graph export g` exits %d: %s%s; want the old definition or the new one", round, code, out, errs)
		}
		if got := n.Must("call", "@g", "run"); !strings.Contains(got, []string{"old", "new"}[cur]) {
			t.Errorf("round %d: @g run printed %q, want the definition export shows", round, got)
		}
	}
}
