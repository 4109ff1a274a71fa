package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// fakeCaller is an in-memory session: tools are Go functions.
type fakeCaller struct {
	mu       sync.Mutex
	calls    []string
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	tools    map[string]func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)
}

func (f *fakeCaller) CallTool(ctx context.Context, name string, args json.RawMessage, _ func(node.CallEvent)) (*mcp.CallToolResult, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+string(args))
	f.mu.Unlock()
	tool, ok := f.tools[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", node.ErrUnknownTool, name)
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	return tool(ctx, a)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newFake() *fakeCaller {
	return &fakeCaller{tools: map[string]func(context.Context, map[string]any) (*mcp.CallToolResult, error){
		"e.identity": func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
			return text(fmt.Sprint(a["text"])), nil
		},
		"e.json": func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: a}, nil
		},
		// e.wait blocks until it is cancelled, or for ms milliseconds.
		"e.wait": func(ctx context.Context, a map[string]any) (*mcp.CallToolResult, error) {
			d := time.Hour
			if ms, ok := a["ms"].(float64); ok {
				d = time.Duration(ms) * time.Millisecond
			}
			select {
			case <-time.After(d):
				return text("waited"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"e.fail": func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil
		},
	}}
}

func mustParse(t testing.TB, src string) *graphlang.Def {
	t.Helper()
	d, err := graphlang.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// events collects step events.
type events struct {
	mu  sync.Mutex
	evs []string
}

func (e *events) add(ev api.StepEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := ev.Step + " " + ev.State
	if ev.Reason != "" {
		s += " " + ev.Reason
	}
	e.evs = append(e.evs, s)
}

func (e *events) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.evs {
		if x == s {
			return true
		}
	}
	return false
}

func TestRunFanOutFanInWhenForeach(t *testing.T) {
	d := mustParse(t, `
inputs: {name: string, files: {type: array, default: [a, b, c]}}
steps:
  hello: {call: e.identity, args: {text: "hi ${inputs.name}"}}
  obj:   {call: e.json, args: {k: {deep: [1, 2]}, name: "${inputs.name}"}}
  both:  {call: e.identity, args: {text: "${steps.hello.text}/${steps.obj.structured.k.deep[1]}"}}
  each:  {call: e.identity, foreach: "${inputs.files}", max_parallel: 2, args: {text: "f-${item}"}}
  never: {call: e.identity, args: {text: x}, when: "${steps.hello.is_error} == true"}
  after: {call: e.identity, args: {text: "never=${steps.never.text}|"}}
output: {both: "${steps.both.text}", each: "${steps.each.structured}", obj: "${steps.obj.structured.k}"}
`)
	f := newFake()
	var ev events
	out, err := Run(context.Background(), d, map[string]any{"name": "bo"}, RunOptions{Caller: f, Emit: ev.add})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	want := `{"both":"hi bo/2","each":["f-a","f-b","f-c"],"obj":{"deep":[1,2]}}`
	if string(got) != want {
		t.Errorf("output = %s\nwant %s", got, want)
	}
	if !ev.has("never skipped when") || !ev.has("both finished") {
		t.Errorf("events = %v", ev.evs)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "e.identity") && strings.Contains(c, "never=") && !strings.Contains(c, `"never=|"`) {
			t.Errorf("a skipped step's text is not empty: %s", c)
		}
	}
}

func TestRunParallelIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("max_parallel: 3\nsteps:\n")
	for i := range 9 {
		fmt.Fprintf(&b, "  s%d: {call: e.wait, args: {ms: 30}}\n", i)
	}
	f := newFake()
	if _, err := Run(context.Background(), mustParse(t, b.String()), nil, RunOptions{Caller: f}); err != nil {
		t.Fatal(err)
	}
	if m := f.maxSeen.Load(); m != 3 {
		t.Errorf("at most %d calls were in flight, want 3 (max_parallel)", m)
	}
}

func TestRunPolicies(t *testing.T) {
	f := newFake()
	var tries atomic.Int64
	f.tools["e.flaky"] = func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		if tries.Add(1) == 1 {
			return nil, errors.New("connection lost")
		}
		return text("ok on try 2"), nil
	}
	d := mustParse(t, `
steps:
  flaky: {call: e.flaky, retry: {attempts: 3, backoff: 1ms}}
  slow:  {call: e.wait, timeout: 20ms, on_error: skip, default: {fallback: true}}
  bad:   {call: e.fail, on_error: continue}
  use:   {call: e.identity, args: {text: "${steps.flaky.text}|${steps.slow.structured.fallback}|${steps.bad.is_error}|${steps.bad.text}"}}
`)
	var ev events
	out, err := Run(context.Background(), d, nil, RunOptions{Caller: f, Emit: ev.add})
	if err != nil {
		t.Fatal(err)
	}
	if out != "ok on try 2|true|true|it broke" {
		t.Errorf("output = %q", out)
	}
	if tries.Load() != 2 || !ev.has("flaky retried") {
		t.Errorf("tries = %d, events %v", tries.Load(), ev.evs)
	}
	if !ev.has("slow skipped on_error") {
		t.Errorf("events = %v", ev.evs)
	}
}

func TestRunFailureCancelsOtherBranches(t *testing.T) {
	f := newFake()
	// bad fails once both long steps are in their calls.
	started := make(chan struct{}, 2)
	wait := f.tools["e.wait"]
	f.tools["e.wait"] = func(ctx context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		return wait(ctx, a)
	}
	fail := f.tools["e.fail"]
	var both sync.Once
	f.tools["e.failLater"] = func(ctx context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		both.Do(func() { <-started; <-started })
		return fail(ctx, a)
	}
	d := mustParse(t, `
steps:
  long: {call: e.wait}
  long2: {call: e.wait}
  bad:  {call: e.failLater, retry: {attempts: 2}}
  later: {call: e.identity, args: {text: "${steps.bad.text}"}}
`)
	var recs sync.Map
	_, err := Run(context.Background(), d, nil, RunOptions{Caller: f, Record: func(r StepRecord) { recs.Store(r.ID, r) }})
	var re *RunError
	if !errors.As(err, &re) || re.Step != "bad" || !strings.Contains(err.Error(), "step bad: the tool reported an error: it broke") {
		t.Fatalf("err = %v", err)
	}
	if n := f.inFlight.Load(); n != 0 {
		t.Errorf("%d calls still in flight after the run failed", n)
	}
	if r, _ := recs.Load("long"); r.(StepRecord).State != api.StepCancelled {
		t.Errorf("long = %+v", r)
	}
	if r, ran := recs.Load("later"); ran {
		t.Errorf("a step after the failed one ran: %+v", r)
	}
}

func TestRunCancelLeavesNothingInFlight(t *testing.T) {
	f := newFake()
	d := mustParse(t, "steps:\n  a: {call: e.wait}\n  b: {call: e.wait}\n  c: {call: e.identity, after: [a, b], args: {text: x}}\n")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 2)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, d, nil, RunOptions{Caller: f, Emit: func(ev api.StepEvent) {
			if ev.State == api.StepStarted {
				started <- struct{}{}
			}
		}})
		done <- err
	}()
	<-started
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := f.inFlight.Load(); n != 0 {
		t.Errorf("%d calls in flight after cancel", n)
	}
}

func TestRunAsk(t *testing.T) {
	d := mustParse(t, "inputs: {f: string}\nsteps:\n  ok: {ask: \"ship ${inputs.f}?\"}\n  go: {call: e.identity, args: {text: \"${steps.ok.text}\"}}\n")
	var asked string
	out, err := Run(context.Background(), d, map[string]any{"f": "x"}, RunOptions{Caller: newFake(), Ask: func(_ context.Context, q, _ string) (*mcp.ElicitResult, error) {
		asked = q
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
	}})
	if err != nil || out != "yes" || asked != "ship x?" {
		t.Errorf("out %q err %v asked %q", out, err, asked)
	}
	// No one to ask is said as such, never "the person declined" (issue 17, item 4).
	const noOne = "step ok: no one is attached to answer: run it from the Commander or a client that supports elicitation"
	_, err = Run(context.Background(), d, map[string]any{"f": "x"}, RunOptions{Caller: newFake()})
	if err == nil || !strings.Contains(err.Error(), noOne) {
		t.Errorf("with no asker: %v", err)
	}
	for name, ask := range map[string]Asker{
		"a router with no one attached": func(context.Context, string, string) (*mcp.ElicitResult, error) { return node.NoOneDeclined(), nil },
		"an attach group with no one":   func(context.Context, string, string) (*mcp.ElicitResult, error) { return nil, node.ErrNoOneToAsk },
	} {
		_, err = Run(context.Background(), d, map[string]any{"f": "x"}, RunOptions{Caller: newFake(), Ask: ask})
		if err == nil || !strings.Contains(err.Error(), noOne) || strings.Contains(err.Error(), "the person declined") {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = Run(context.Background(), d, map[string]any{"f": "x"}, RunOptions{Caller: newFake(), Ask: func(context.Context, string, string) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	if err == nil || !strings.Contains(err.Error(), "the person declined") {
		t.Errorf("a person who declined: %v", err)
	}
}

// TestRunAskURL: an ask step with url: asks the person to open the page
// (its references filled in) and goes on once they are done there; a url
// that is not a web page's fails the step before anyone is asked, and
// url: without ask: is refused when the graph is read (issue 27).
func TestRunAskURL(t *testing.T) {
	d := mustParse(t, "inputs: {id: string}\nsteps:\n  ok: {ask: \"Approve deploy ${inputs.id}\", url: \"https://ci.example.com/approve/${inputs.id}\"}\n  go: {call: e.identity, args: {text: \"${steps.ok.text}\"}}\n")
	var asked, page string
	ask := func(_ context.Context, q, u string) (*mcp.ElicitResult, error) {
		asked, page = q, u
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	out, err := Run(context.Background(), d, map[string]any{"id": "42"}, RunOptions{Caller: newFake(), Ask: ask})
	if err != nil || out != "accepted" || asked != "Approve deploy 42" || page != "https://ci.example.com/approve/42" {
		t.Errorf("out %q err %v asked %q to open %q", out, err, asked, page)
	}
	bad := mustParse(t, "inputs: {u: string}\nsteps:\n  ok: {ask: \"go\", url: \"${inputs.u}\"}\n")
	page = ""
	_, err = Run(context.Background(), bad, map[string]any{"u": "javascript:alert(1)"}, RunOptions{Caller: newFake(), Ask: ask})
	if err == nil || !strings.Contains(err.Error(), "must be an absolute http or https URL") || page != "" {
		t.Errorf("a url that is not a page: %v (asked to open %q)", err, page)
	}
	if _, err := graphlang.Parse([]byte("steps:\n  ok: {call: e.identity, url: \"https://x\"}\n")); err == nil || !strings.Contains(err.Error(), "`url:` is the page an `ask:` step asks the person to open") {
		t.Errorf("url without ask: %v", err)
	}
}

func TestRunResumeSkipsFinishedSteps(t *testing.T) {
	f := newFake()
	d := mustParse(t, "steps:\n  a: {call: e.identity, args: {text: A}}\n  b: {call: e.identity, args: {text: \"${steps.a.text}B\"}}\n")
	prior := map[string]*StepRecord{"a": {ID: "a", State: api.StepFinished, Result: &graphlang.StepResult{Text: "old"}}}
	out, err := Run(context.Background(), d, nil, RunOptions{Caller: f, Prior: prior})
	if err != nil || out != "oldB" {
		t.Fatalf("out %q err %v", out, err)
	}
	if len(f.calls) != 1 {
		t.Errorf("calls = %v, want only b", f.calls)
	}
}

// BenchmarkChain is a chain of identity steps through an in-memory caller.
func BenchmarkChain1000(b *testing.B) {
	var s strings.Builder
	s.WriteString("steps:\n  s0: {call: e.identity, args: {text: x}}\n")
	for i := 1; i < 1000; i++ {
		fmt.Fprintf(&s, "  s%d: {call: e.identity, args: {text: \"${steps.s%d.text}\"}}\n", i, i-1)
	}
	d := mustParse(b, s.String())
	f := newFake()
	b.ResetTimer()
	for b.Loop() {
		f.calls = f.calls[:0]
		if _, err := Run(context.Background(), d, nil, RunOptions{Caller: f}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunForeachContinueKeepsEveryItem: with on_error: continue, a failed
// item does not cancel the others and every item's result is kept, the
// texts offered as a list; ${steps.X.text} loses one trailing newline
// (issue 17, item 9).
func TestRunForeachContinueKeepsEveryItem(t *testing.T) {
	d := mustParse(t, `
steps:
  each: {call: e.maybe, foreach: [a, bad, c, d], args: {text: "${item}"}, on_error: continue}
  line: {call: e.identity, args: {text: "x\n\n"}}
output: {texts: "${steps.each.texts}", failed: "${steps.each.is_error}", line: "[${steps.line.text}]"}
`)
	f := newFake()
	f.tools["e.maybe"] = func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		if a["text"] == "bad" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad item\n"}}}, nil
		}
		return text(fmt.Sprint(a["text"]) + " ok\n"), nil
	}
	out, err := Run(context.Background(), d, nil, RunOptions{Caller: f})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	want := `{"failed":true,"line":"[x\n]","texts":["a ok","bad item","c ok","d ok"]}`
	if string(got) != want {
		t.Errorf("output = %s\nwant %s", got, want)
	}
}
