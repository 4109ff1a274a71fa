package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

func runScript(t *testing.T, f *fakeTools, src string, opts *Options) (*Result, error) {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	opts.Tools = f
	return Run(context.Background(), src, opts)
}

func mustRun(t *testing.T, f *fakeTools, src string) any {
	t.Helper()
	res, err := runScript(t, f, src, nil)
	if err != nil {
		t.Fatalf("%s:\n%v", src, err)
	}
	return res.Value
}

// TestResult: the answer is `result`, else the last line's value when it
// is an expression; print() comes back beside it.
func TestResult(t *testing.T) {
	f := standardFake()
	for _, tc := range []struct {
		src  string
		want any
	}{
		{`result = 1 + 2`, int64(3)},
		{"x = 2\nx * 21", int64(42)},
		{"result = 'r'\n'last'", "r"},
		{`x = 1`, nil},
		{`result = {"a": [1, 2.5, None, True], "b": (1,)}`, map[string]any{"a": []any{int64(1), 2.5, nil, true}, "b": []any{int64(1)}}},
		{"def f(n):\n  return [i * i for i in range(n)]\nf(4)", []any{int64(0), int64(1), int64(4), int64(9)}},
		{"n = 0\nwhile n < 10:\n  n += 3\nn", int64(12)},
		{`{"s": set([1]) == set([1]), "big": 1 << 70}`, map[string]any{"s": true, "big": jsonNumber("1180591620717411303424")}},
	} {
		got := mustRun(t, f, tc.src)
		if d := diff(tc.want, got); d != "" {
			t.Errorf("%s: \n%s", tc.src, d)
		}
	}
	res, err := runScript(t, f, "print('a', 1)\nprint([2])\nresult = 'x'", nil)
	if err != nil || res.Printed != "a 1\n[2]\n" || res.Value != "x" {
		t.Errorf("print: %q %v %v", res.Printed, res.Value, err)
	}
}

// TestToolCalls: every visible tool is a function; a non-identifier name
// is reachable through tool() and as its '_' spelling; a tool with an
// output schema gives its structured content, others their text.
func TestToolCalls(t *testing.T) {
	f := standardFake()
	for _, tc := range []struct {
		src  string
		want any
	}{
		{`e1.echo(text="hi")`, "hi"},
		{`e1.echo("positional")`, "positional"},
		{`e1.echo({"text": "from a dict"})`, "from a dict"},
		{`tool("e1.get-sum", a=1, b=2)`, "3"},
		{`tool("e1__get-sum", a=1, b=2)`, "3"},
		{`e1.get_sum(a=1, b=2.5)`, "3.5"},
		{`my_fs.stat(path="a.txt")`, map[string]any{"name": "a.txt", "size": int64(42)}},
		{`tool("my-fs.stat", path="b")["name"]`, "b"},
		{`tool(e1.echo, text="by value")`, "by value"},
		{`json.decode(tool("e1.echo", text='{"k": [1, "2"]}'))`, map[string]any{"k": []any{int64(1), "2"}}},
		{`json.loads('[1]') + [json.dumps({"b": 1, "a": None})]`, []any{int64(1), `{"a":null,"b":1}`}},
		{`sorted(dir(e1))`, []any{"echo", "fail", "get_sum"}},
		{`describe("e1.get-sum")`, "e1.get_sum(a: float, b: float) -> str\n\nAdd two numbers."},
	} {
		got := mustRun(t, f, tc.src)
		if d := diff(tc.want, got); d != "" {
			t.Errorf("%s: \n%s", tc.src, d)
		}
	}
}

// TestToolErrors: a failed call is a value the script tests; using it as
// a value stops the script with the failure and where it happened.
func TestToolErrors(t *testing.T) {
	f := standardFake()
	res, err := runScript(t, f, `r = e1.fail()
ok = e1.echo(text="still")
result = [is_error(r), bool(r), r.error, r.tool, is_error(ok), ok]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff([]any{true, false, "it broke", "e1.fail", false, "still"}, res.Value); d != "" {
		t.Errorf("\n%s", d)
	}
	if res.Calls != 2 || res.Failed != 1 {
		t.Errorf("calls %d failed %d, want 2 and 1", res.Calls, res.Failed)
	}
	// A call error (the caller's, not the tool's) is a value too.
	f2 := newFake(fakeTool{"x", &mcp.Tool{Name: "down", InputSchema: schema(`{"type":"object"}`)}, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("%w: node x is in ERROR", node.ErrNotReady)
	}})
	if v := mustRun(t, f2, `r = x.down()
[is_error(r), r.error]`); !reflect.DeepEqual(v, []any{true, "node x is not ready: node x is in ERROR"}) && !strings.Contains(fmt.Sprint(v), "in ERROR") {
		t.Errorf("call error: %v", v)
	}
	for _, src := range []string{
		"r = e1.fail()\nx = r + 'a'",
		"r = e1.fail()\nx = r['k']",
		"r = e1.fail()\nx = r.split()",
		"r = e1.fail()\nx = {r: 1}",
	} {
		_, err := runScript(t, f, src, nil)
		var e *Error
		if !errors.As(err, &e) || e.Line != 2 || !strings.Contains(e.Msg, "e1.fail at line 1 failed: it broke") || !strings.Contains(e.Msg, "is_error") {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// TestLimits: each limit stops its script with an error naming the limit
// and its value, at the line that passed it — and the next script runs.
func TestLimits(t *testing.T) {
	f := standardFake()
	small := Limits{Steps: 100_000, Bytes: 1 << 20, Calls: 5, Time: time.Minute}
	for _, tc := range []struct {
		name, src, limit, msg string
		lim                   Limits
		line                  int
	}{
		{"loop forever", "x = 0\nwhile True:\n  x += 1", LimitSteps, "limit steps=100000", small, 3},
		{"busy work", "x = 0\nwhile True:\n  x += 1", LimitTime, "limit time=50ms", Limits{Steps: 1 << 62, Time: 50 * time.Millisecond}, 0},
		{"huge list", "x = [0] * 1000000000", LimitBytes, "limit bytes=1 MB", small, 1},
		{"huge string", `x = "ab" * 1000000000`, LimitBytes, "limit bytes=1 MB", small, 1},
		{"doubling string", "s = 'ab'\nfor i in range(40):\n  s = s + s", LimitBytes, "limit bytes=1 MB", small, 3},
		{"doubling in place", "s = [1]\nfor i in range(40):\n  s += s", LimitBytes, "limit bytes=1 MB", Limits{Bytes: 1 << 20}, 3},
		{"doubling extend", "s = [1]\nfor i in range(40):\n  s.extend(s)", LimitBytes, "limit bytes=1 MB", Limits{Bytes: 1 << 20}, 3},
		{"join of copies", "s = 'x' * 1000\nt = ','.join([s] * 100000)", LimitBytes, "limit bytes=1 MB", small, 2},
		{"format of copies", "s = 'x' * 1000\nt = ('%s' * 2000) % tuple([s] * 2000)", LimitBytes, "limit bytes=1 MB", small, 2},
		{"str of copies", "s = 'x' * 1000\nt = str([s] * 5000)", LimitBytes, "limit bytes=1 MB", small, 2},
		{"replace", "s = 'x' * 2000\nt = s.replace('x', s)", LimitBytes, "limit bytes=1 MB", small, 2},
		{"split", "s = 'x,' * 50000\nt = s.split(',')", LimitBytes, "limit bytes=1 MB", small, 2},
		{"slices kept", "l = [0] * 10000\nk = []\nfor i in range(1000):\n  k.append(l[:])", LimitBytes, "limit bytes=1 MB", small, 4},
		{"dicts made in a loop", "l = []\nfor i in range(100000):\n  l.append({'i': i})", LimitBytes, "limit bytes=1 MB", small, 3},
		{"nested dicts", "d = {}\nfor i in range(100000):\n  d = {'d': d}", LimitBytes, "limit bytes=1 MB", small, 3},
		{"list of a range", "x = list(range(1000000000))", LimitSteps, "limit steps=100000", small, 1},
		{"max of a range", "x = max(range(2000000000))", LimitSteps, "limit steps=100000", small, 1},
		{"big int", "x = 3\nfor i in range(100):\n  x = x * x", LimitBytes, "limit bytes=1 MB", small, 3},
		{"too many calls", "for i in range(10):\n  e1.echo(text='x')", LimitCalls, "limit calls=5", small, 2},
		{"too many parallel calls", "parallel([(e1.echo, {'text': 'x'})] * 6)", LimitCalls, "limit calls=5", small, 1},
		{"huge tool result", "s = e1.echo(text='x' * 300000)\nt = e1.echo(text=s)", LimitBytes, "limit bytes=1 MB", small, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runScript(t, f, tc.src, &Options{Limits: tc.lim})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Limit != tc.limit || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("limit %q, message %q; want %q naming %q", e.Limit, e.Msg, tc.limit, tc.msg)
			}
			if tc.line != 0 && e.Line != tc.line {
				t.Errorf("line %d, want %d (%v)", e.Line, tc.line, e)
			}
			if v := mustRun(t, f, `e1.echo(text="after")`); v != "after" {
				t.Errorf("the next script: %v", v)
			}
		})
	}
}

// TestCancel: a caller that gives up stops the script, named as such.
func TestCancel(t *testing.T) {
	f := standardFake()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	slow := newFake(fakeTool{"w", &mcp.Tool{Name: "wait", InputSchema: schema(`{"type":"object"}`)}, func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	go func() { <-started; cancel() }()
	_, err := Run(ctx, "w.wait()\nx = 0\nwhile True:\n  x += 1", &Options{Tools: slow})
	var e *Error
	if !errors.As(err, &e) || e.Limit != "" || !strings.Contains(e.Msg, "cancelled") {
		t.Errorf("err = %v", err)
	}
	_ = f
}

// TestNoLoad: load() is refused before anything runs, by name.
func TestNoLoad(t *testing.T) {
	f := standardFake()
	res, err := runScript(t, f, "e1.echo(text='x')\nload('//lib.star', 'helper')", nil)
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || !strings.Contains(e.Msg, `load("//lib.star") is not available`) {
		t.Errorf("err = %v", err)
	}
	if res.Calls != 0 || len(f.calls()) != 0 {
		t.Errorf("a script with load ran %d calls", len(f.calls()))
	}
}

// TestHidden: a filter hides tools from a script, as `mcp serve --tools`
// hides them from a client: not a name, not through tool(), not in
// parallel(), not in the description.
func TestHidden(t *testing.T) {
	f := standardFake()
	onlyE1 := func(id string, _ *mcp.Tool) bool { return id == "e1" }
	if v, err := runScript(t, f, `e1.echo(text="seen")`, &Options{Visible: onlyE1}); err != nil || v.Value != "seen" {
		t.Fatalf("visible: %v %v", v.Value, err)
	}
	for _, tc := range []struct{ src, msg string }{
		{`sh.bash(command="id")`, "no builtin and no node visible to this script is called sh"},
		{`tool("sh.bash", command="id")`, `tool "sh.bash" is not visible to this script`},
		{`parallel([("sh.bash", {"command": "id"})])`, `tool "sh.bash" is not visible to this script`},
		{`describe("sh.bash")`, `tool "sh.bash" is not visible to this script`},
	} {
		_, err := runScript(t, f, tc.src, &Options{Visible: onlyE1})
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.msg)
		}
	}
	for _, c := range f.calls() {
		if c.name == "sh.bash" {
			t.Errorf("the hidden tool was called: %+v", c)
		}
	}
	if d := Tool(f.ts, &ToolOptions{Visible: onlyE1}).Description; strings.Contains(d, "sh.bash") || !strings.Contains(d, "e1.echo(") {
		t.Errorf("description:\n%s", d)
	}
}

// TestCaller: each call is the script's, named with its client, run and
// line:column — what the call log shows.
func TestCaller(t *testing.T) {
	f := standardFake()
	ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerMCP, Name: "claude-code", Via: "stdio"})
	res, err := Run(ctx, "a = e1.echo(text='1')\nb = parallel([(e1.echo, {'text': '2'})])", &Options{Tools: f})
	if err != nil {
		t.Fatal(err)
	}
	want := []node.Caller{
		{Kind: CallerKind, Name: "mcp:claude-code", Via: "stdio", Run: res.Run, Step: "1:12"},
		{Kind: CallerKind, Name: "mcp:claude-code", Via: "stdio", Run: res.Run, Step: "2:13"},
	}
	var got []node.Caller
	for _, c := range f.calls() {
		got = append(got, c.caller)
	}
	if d := diff(want, got); d != "" || !strings.HasPrefix(res.Run, "script-") {
		t.Errorf("run %q callers \n%s", res.Run, d)
	}
}

// TestParallelBound: parallel() runs its calls at once, never more than
// Limits.Parallel, and answers in order.
func TestParallelBound(t *testing.T) {
	const bound, calls = 4, 23
	var inflight, most atomic.Int32
	full := make(chan struct{})
	var once sync.Once
	f := newFake(fakeTool{"p", &mcp.Tool{Name: "work", InputSchema: schema(`{"type":"object","properties":{"i":{"type":"integer"}}}`)},
		func(ctx context.Context, a map[string]any) (*mcp.CallToolResult, error) {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			if n == bound {
				once.Do(func() { close(full) })
			}
			select { // the first calls wait until the bound is reached
			case <-full:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return textResult(fmt.Sprint(a["i"])), nil
		}})
	res, err := runScript(t, f, fmt.Sprintf("result = parallel([(p.work, {'i': i}) for i in range(%d)])", calls), &Options{Limits: Limits{Parallel: bound}})
	if err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got != bound {
		t.Errorf("at most %d calls ran at once, want %d", got, bound)
	}
	want := make([]any, calls)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if d := diff(want, res.Value); d != "" {
		t.Errorf("results out of order \n%s", d)
	}
}

// TestErrorPositions: errors point at the script's line and column,
// inside a function too, with Starlark's backtrace.
func TestErrorPositions(t *testing.T) {
	f := standardFake()
	for _, tc := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{"x = 1\ny = (", 2, 6, "got end of file"},
		{"x = 1\nimport os", 2, 1, "scripts have no import"},
		{"try:\n  x = 1\nexcept:\n  pass", 1, 1, "scripts have no try/except: a failed call returns an error value"},
		{"x = 2 ** 3", 1, 9, "Starlark has no ** operator"},
		{"def f(x):\n  return x['missing']\nf({})", 2, 11, `key "missing" not in dict`},
		{"x = undefined_name", 1, 5, "undefined: undefined_name"},
		{"def f(): return f()\nf()", 1, 17, "called recursively"},
		{"fail('stop here')", 1, 5, "stop here"},
		{"d = {}\nd['k'] += 1", 2, 8, `key "k" not in dict`},
	} {
		_, err := runScript(t, f, tc.src, nil)
		var e *Error
		if !errors.As(err, &e) || e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: %v (line %d col %d), want %d:%d %q", tc.src, err, e.Line, e.Column, tc.line, tc.col, tc.msg)
		}
	}
}

// TestCheck compiles against the visible tools and runs nothing.
func TestCheck(t *testing.T) {
	f := standardFake()
	if err := Check(context.Background(), "e1.echo(text='x')\nsh.bash(command='y')", &Options{Tools: f}); err != nil {
		t.Errorf("check: %v", err)
	}
	err := Check(context.Background(), "e1.echo(text='x')\nsh.bash(command='y')", &Options{Tools: f, Visible: func(id string, _ *mcp.Tool) bool { return id == "e1" }})
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 {
		t.Errorf("check with a filter: %v", err)
	}
	if n := len(f.calls()); n != 0 {
		t.Errorf("Check made %d calls", n)
	}
}

// TestToolDescription: signatures from the schemas, and the fallbacks
// when they do not fit.
func TestToolDescription(t *testing.T) {
	f := standardFake()
	d := Tool(f.ts, nil).Description
	for _, want := range []string{
		"e1.echo(text: str) -> str  # Echo the text back.\n",
		"e1.get_sum(a: float, b: float) -> str  # Add two numbers.\n",
		`my_fs.stat(path: str) -> {"name": str, "size": int}  # File facts.`,
		"sh.bash(command: str = None) -> str",
		"parallel([(e1.echo, {...}), (e1.echo, {...})])",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
	// Many tools: signatures, then names by node, then nodes.
	var many []fakeTool
	for i := range 120 {
		many = append(many, fakeTool{fmt.Sprintf("n%d", i%3), &mcp.Tool{Name: fmt.Sprintf("tool_%d", i), Description: strings.Repeat("Does a thing well. ", 6),
			InputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`)}, nil})
	}
	mf := newFake(many...)
	full := Tool(mf.ts, &ToolOptions{MaxBytes: 1 << 20}).Description
	if !strings.Contains(full, "n0.tool_0(path: str, limit: int = None) -> str  # Does a thing well.") {
		t.Errorf("full:\n%s", full)
	}
	names := Tool(mf.ts, &ToolOptions{Describe: "describe_tool", Search: "search_tools"}).Description
	if len(names) > DefaultDescriptionBytes || !strings.Contains(names, "n0: tool_0, tool_3,") || !strings.Contains(names, "search_tools finds tools; describe_tool shows a tool's parameters") {
		t.Errorf("names only (%d bytes):\n%s", len(names), names)
	}
	nodes := Tool(mf.ts, &ToolOptions{MaxBytes: 1700}).Description
	if len(nodes) > 1700 || !strings.Contains(nodes, "Nodes: n0 (40 tools), n1 (40 tools)") {
		t.Errorf("nodes only (%d bytes):\n%s", len(nodes), nodes)
	}
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"mode":{"enum":["a","b"]},"n":{"type":["integer","null"],"default":3},"tags":{"type":"array","items":{"type":"string"}}},"required":["mode"]}`,
			`x.t(mode: "a" | "b", n: int | None = 3, tags: list[str] = None) -> str`},
		{`{"type":"object","properties":{"max-results":{"type":"integer"},"q":{"type":"string"}},"required":["q"]}`,
			`x.t({"q": str, "max-results": int = None}) -> str`},
		{`{"type":"object"}`, `x.t() -> str`},
	} {
		if got := signature("x.t", &mcp.Tool{Name: "t", InputSchema: schema(tc.schema)}); got != tc.want {
			t.Errorf("signature:\n got %s\nwant %s", got, tc.want)
		}
	}
	if got := signature(`tool("x.a-b")`, &mcp.Tool{InputSchema: schema(`{"type":"object","properties":{"a":{"type":"string"}}}`)}); got != `tool("x.a-b", a: str = None) -> str` {
		t.Errorf("tool() signature: %s", got)
	}
}

// TestToolResult: what run_script answers.
func TestToolResult(t *testing.T) {
	f := standardFake()
	res, err := runScript(t, f, "print('note')\nresult = {'n': 1}", nil)
	r := ToolResult(res, err)
	if r.IsError || r.Content[0].(*mcp.TextContent).Text != "note\n{\"n\":1}" {
		t.Errorf("result: %+v", r.Content[0])
	}
	sc := r.StructuredContent.(map[string]any)
	if sc["printed"] != "note\n" || sc["calls"] != 0 || sc["run"] != res.Run {
		t.Errorf("structured: %v", sc)
	}
	res, err = runScript(t, f, "x = 1\nx = x + 'a'", nil)
	r = ToolResult(res, err)
	sc = r.StructuredContent.(map[string]any)
	e := sc["error"].(map[string]any)
	if !r.IsError || e["line"] != 2 || e["column"] != 7 || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "Error: script:2:7: unknown binary op: int + string") {
		t.Errorf("error result: %v %v", r.Content[0], sc)
	}
}

func jsonNumber(s string) any { return json.Number(s) }

// diff is "" when want and got are equal, else both.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want %#v\n got %#v", want, got)
}

// TestGlobals: data a host gives a script (a graph step's inputs and
// results) is read by name, frozen, and hides a node of the same name.
func TestGlobals(t *testing.T) {
	f := standardFake()
	opts := &Options{Tools: f, Globals: map[string]any{
		"inputs": map[string]any{"dir": "/notes", "n": 3},
		"steps":  map[string]any{"list": map[string]any{"text": "a\nb", "structured": []any{"a", "b"}}},
		"sh":     "shadowed",
	}}
	res, err := Run(context.Background(), `result = [inputs["dir"], inputs["n"] + 1, steps["list"]["structured"], sh, tool("sh.bash", command="x")]`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.Value); string(got) != `["/notes",4,["a","b"],"shadowed","ran x"]` {
		t.Errorf("result %s", got)
	}
	_, err = Run(context.Background(), `inputs["dir"] = "/etc"`, opts)
	if err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("changing a global: %v, want a frozen error", err)
	}
	if err := Check(context.Background(), `x = steps["list"]`, opts); err != nil {
		t.Errorf("Check with globals: %v", err)
	}
	if err := Check(context.Background(), `x = gh.create_issue(title="t")`, &Options{Tools: f, Assume: []string{"gh"}}); err != nil {
		t.Errorf("Check with an assumed node: %v", err)
	}
	if _, err := Run(context.Background(), `x = 1`, &Options{Tools: f, Globals: map[string]any{"json": 1}}); err == nil {
		t.Error("a global named like a builtin was accepted")
	}
}

// TestReads: the keys a script reads a global with, written out, and the
// first use that hides them.
func TestReads(t *testing.T) {
	u, err := Reads("a = steps[\"x\"][\"text\"]\nb = steps.get(\"y\")\nfor k in inputs:\n    print(k)\n", "steps", "inputs", "item")
	if err != nil {
		t.Fatal(err)
	}
	if got := u["steps"]; len(got.Reads) != 2 || got.Reads[0] != (Read{"x", 1, 11}) || got.Reads[1].Key != "y" || got.Other != nil {
		t.Errorf("steps: %+v", got)
	}
	if got := u["inputs"]; len(got.Reads) != 0 || got.Other == nil || *got.Other != (Read{"", 3, 10}) {
		t.Errorf("inputs: %+v", got)
	}
	if got := u["item"]; len(got.Reads) != 0 || got.Other != nil {
		t.Errorf("item: %+v", got)
	}
	var e *Error
	if _, err := Reads("x = (", "steps"); !errors.As(err, &e) || e.Line != 1 {
		t.Errorf("a syntax error: %v", err)
	}
}
