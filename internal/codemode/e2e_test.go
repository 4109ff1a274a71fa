package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// realSession is a session of real nodes: identity (echo), bash (sh),
// the reference filesystem server on a folder of three notes (fs) and the
// reference memory server (mem); log holds every call the session made.
type realSession struct {
	*session.Session
	dir string
	mu  sync.Mutex
	log []*session.CallInfo
}

func newRealSession(t testing.TB) *realSession {
	return newRealSessionWith(t, map[string]string{"note1.txt": "alpha beta gamma", "note2.txt": "one two", "note3.txt": "the quick brown fox jumps"})
}

// newRealSessionWith is newRealSession with files in its folder.
func newRealSessionWith(t testing.TB, files map[string]string) *realSession {
	t.Helper()
	rs := &realSession{dir: t.TempDir()}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(rs.dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(rs.dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	rs.Session = session.New("test", all.Registry(nil), &session.Options{Dir: t.TempDir(), OnCall: func(_ context.Context, c *session.CallInfo) {
		rs.mu.Lock()
		rs.log = append(rs.log, c)
		rs.mu.Unlock()
	}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs.Close(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, spec := range []node.Spec{
		{ID: "echo", Kind: "identity"},
		{ID: "sh", Kind: "bash"},
		{ID: "fs", Kind: "mcp", Command: npmfix.ServerFilesystem(t, rs.dir)},
		{ID: "mem", Kind: "mcp", Command: npmfix.ServerMemory(t)},
	} {
		if _, err := rs.Add(ctx, spec); err != nil {
			t.Fatalf("adding %s: %v", spec.ID, err)
		}
	}
	return rs
}

func (rs *realSession) calls() []*session.CallInfo {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]*session.CallInfo(nil), rs.log...)
}

// tenCalls is the task of issue 30, item 5: ten dependent calls — find
// the folder, list it, read three files, write a summary, check it, and
// record it in the memory server. The script finds the folder itself:
// nothing is quoted into it.
const tenCalls = `
allowed = fs.list_allowed_directories()["content"]
folder = [l for l in allowed.splitlines() if l.startswith("/")][0]
listing = fs.list_directory(path=folder)["content"]
names = sorted([l[len("[FILE] "):] for l in listing.splitlines() if l.startswith("[FILE] ")])[:3]
texts = parallel([(fs.read_text_file, {"path": folder + "/" + n}) for n in names])
lines = ["%s: %d words" % (n, len(t["content"].split())) for n, t in zip(names, texts)]
summary = "\n".join(lines)
fs.write_file(path=folder + "/summary.txt", content=summary)
info = fs.get_file_info(path=folder + "/summary.txt")["content"]
mem.create_entities(entities=[{"name": "notes-summary", "entityType": "report", "observations": lines}])
mem.create_relations(relations=[{"from": "notes-summary", "to": "notes-summary", "relationType": "summarises"}])
found = mem.search_nodes(query="notes-summary")["entities"]
result = {"summary": summary, "recorded": [e["name"] for e in found], "size_known": "size" in info}
`

// TestRealNodes: a script's ten dependent calls to real servers, each
// the session's call under the script's run.
func TestRealNodes(t *testing.T) {
	rs := newRealSession(t)
	ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerMCP, Name: "inspector", Via: "http"})
	res, err := codemode.Run(ctx, tenCalls, &codemode.Options{Tools: rs})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Printed)
	}
	want := map[string]any{
		"summary":    "note1.txt: 3 words\nnote2.txt: 2 words\nnote3.txt: 5 words",
		"recorded":   []any{"notes-summary"},
		"size_known": true,
	}
	if got, _ := json.Marshal(res.Value); string(got) != mustJSON(want) {
		t.Errorf("result %s, want %s", got, mustJSON(want))
	}
	if b, err := os.ReadFile(filepath.Join(rs.dir, "summary.txt")); err != nil || string(b) != want["summary"] {
		t.Errorf("summary.txt: %q %v", b, err)
	}
	calls := rs.calls()
	if len(calls) != 10 || res.Calls != 10 {
		t.Fatalf("%d calls logged, %d counted; want 10", len(calls), res.Calls)
	}
	for _, c := range calls {
		if c.Caller.Kind != codemode.CallerKind || c.Caller.Name != "mcp:inspector" || c.Caller.Via != "http" || c.Caller.Run != res.Run || c.Err != nil || c.Result.IsError {
			t.Errorf("call %s.%s: caller %+v, err %v", c.Node, c.Tool, c.Caller, c.Err)
		}
	}
}

// TestRealNodesStopped: scripts that loop, busy-wait, build a huge list,
// call a hidden tool, load, or call too often are each stopped with
// their own error — and the session and every node answer after.
func TestRealNodesStopped(t *testing.T) {
	rs := newRealSession(t)
	noShell := func(id string, _ *mcp.Tool) bool { return id != "sh" }
	for _, tc := range []struct {
		name, src, limit, msg string
		opts                  codemode.Options
	}{
		{"loops forever", "while True:\n  echo.identity", codemode.LimitSteps, "limit steps=", codemode.Options{}},
		{"busy work", "n = 0\nwhile True:\n  n += 1", codemode.LimitTime, "limit time=200ms", codemode.Options{Limits: codemode.Limits{Steps: 1 << 62, Time: 200 * time.Millisecond}}},
		{"huge list", "x = [echo.identity(text='x')] * 1000000000", codemode.LimitBytes, "limit bytes=64 MB", codemode.Options{}},
		{"huge string", "x = fs.read_text_file(path='/etc/hostname')\ny = str(x) * 100000000", codemode.LimitBytes, "limit bytes=64 MB", codemode.Options{}},
		{"hidden tool", "tool('sh.bash', command='touch /tmp/leaked')", "", `tool "sh.bash" is not visible to this script`, codemode.Options{Visible: noShell}},
		{"hidden node", "sh.bash(command='touch /tmp/leaked')", "", "no node visible to this script is called sh", codemode.Options{Visible: noShell}},
		{"load", "load('fs.star', 'read')", "", `load("fs.star") is not available`, codemode.Options{}},
		{"too many calls", "for i in range(10):\n  echo.identity(text=str(i))", codemode.LimitCalls, "limit calls=3", codemode.Options{Limits: codemode.Limits{Calls: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Tools = rs
			_, err := codemode.Run(context.Background(), tc.src, &opts)
			var e *codemode.Error
			if !errors.As(err, &e) || e.Limit != tc.limit || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("err %v (limit %q), want limit %q and %q", err, e.Limit, tc.limit, tc.msg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, call := range [][2]string{{"echo.identity", `{"text":"after"}`}, {"sh.bash", `{"command":"echo after"}`}, {"fs.list_allowed_directories", `{}`}, {"mem.read_graph", `{}`}} {
				res, err := rs.CallTool(ctx, call[0], json.RawMessage(call[1]), nil)
				if err != nil || res.IsError {
					t.Errorf("%s after the script: %v %v", call[0], err, res)
				}
			}
			for _, info := range rs.Infos() {
				if info.State != node.Ready {
					t.Errorf("node %s is %s after the script", info.ID, info.State)
				}
			}
		})
	}
	if _, err := os.Stat("/tmp/leaked"); err == nil {
		t.Errorf("a hidden tool ran")
	}
}

// TestRealNodesErrors: what a tool or the session refuses comes back as
// a value the script tests: bad arguments, a call nested too deep.
func TestRealNodesErrors(t *testing.T) {
	rs := newRealSession(t)
	res, err := codemode.Run(context.Background(), `r = fs.read_text_file(pth="x")
m = fs.read_text_file(path="/nonexistent/file")
result = [is_error(r), r.error, is_error(m), m.error]`, &codemode.Options{Tools: rs})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Value.([]any)
	if v[0] != true || !strings.Contains(v[1].(string), "invalid arguments") || v[2] != true || !strings.Contains(v[3].(string), "denied") && !strings.Contains(v[3].(string), "outside") {
		t.Errorf("errors: %v", v)
	}
	chain := make([]string, node.MaxCallDepth)
	for i := range chain {
		chain[i] = fmt.Sprintf("s/n%d", i)
	}
	deep, err := node.WithCallChain(context.Background(), chain)
	if err != nil {
		t.Fatal(err)
	}
	res, err = codemode.Run(deep, "r = echo.identity(text='x')\nresult = r.error", &codemode.Options{Tools: rs})
	if err != nil || !strings.Contains(fmt.Sprint(res.Value), "calls nest more than 16 deep") {
		t.Errorf("a call past the depth limit: %v %v", res.Value, err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
