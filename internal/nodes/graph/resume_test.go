package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// probe is a node kind for these tests: tool "look {dir}" answers with
// the steps that the files in dir record as finished ("a b"), as a step
// sees the disk when it runs.
type probe struct{ sleeper }

var lookTool = &mcp.Tool{Name: "look", InputSchema: map[string]any{
	"type": "object", "properties": map[string]any{"dir": map[string]any{"type": "string"}},
}}

var finishedStep = regexp.MustCompile(`\{"id":"(\w+)","state":"finished"`)

func (n *probe) ListTools(context.Context) ([]*mcp.Tool, error) { return []*mcp.Tool{lookTool}, nil }
func (n *probe) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	var a struct{ Dir string }
	if err := json.Unmarshal(req.Arguments, &a); err != nil {
		return nil, err
	}
	files, _ := filepath.Glob(filepath.Join(a.Dir, "*"))
	var ids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range finishedStep.FindAllSubmatch(b, -1) {
			ids = append(ids, string(m[1]))
		}
	}
	slices.Sort(ids)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(slices.Compact(ids), " ")}}}, nil
}

// runsDir is where the graph id of a session made by newSessionIn(dir)
// keeps its runs.
func runsDir(dir, id string) string { return filepath.Join(dir, "nodes", id, "runs") }

// TestDependantStartsAfterItsDependencyIsOnDisk: when a step starts, the
// step it depends on is recorded done on disk — a crash at that moment
// cannot make a resume run it again. (Run records alone are written at
// most every 100 ms, so before the journal the dependant saw "started".)
func TestDependantStartsAfterItsDependencyIsOnDisk(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		s := newSessionIn(t, dir)
		s.Registry().Register("probe", func(spec node.Spec, env node.Env) (node.Node, error) {
			n := &probe{}
			n.Init(spec, env)
			return n, nil
		})
		if _, err := s.Add(context.Background(), node.Spec{ID: "p", Kind: "probe"}); err != nil {
			t.Fatal(err)
		}
		addGraph(t, s, "g", fmt.Sprintf(`
steps:
  a: {call: echo.identity, args: {text: A}}
  b: {call: echo.identity, args: {text: B}}
  look: {call: p.look, args: {dir: %q}, after: [a, b]}
output: "${steps.look.text}"
`, runsDir(dir, "g")))
		res, err := s.Call(context.Background(), "g", &node.CallRequest{Tool: "run"})
		if err != nil || res.IsError {
			t.Fatal(err, res)
		}
		if seen := res.Content[0].(*mcp.TextContent).Text; seen != "a b" {
			t.Fatalf("step look started with steps %q recorded finished on disk, want \"a b\"", seen)
		}
	}
}

// interrupted runs graph g (whose step "wait" calls zz.sleep) and cancels
// it once that step is in flight, as a killed daemon leaves a run: earlier
// steps done, one in flight. It returns the run's id.
func interrupted(t *testing.T, s *session.Session, args string) string {
	t.Helper()
	sub := s.Subscribe(256)
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "g", &node.CallRequest{Tool: "run", Arguments: json.RawMessage(args)})
		done <- err
	}()
	deadline := time.After(30 * time.Second)
	for waiting := true; waiting; {
		select {
		case ev := <-sub.C:
			waiting = !(ev.Kind == session.EventCallStart && ev.Node == "zz")
		case <-deadline:
			t.Fatal("step wait did not start")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled run ended with %v", err)
	}
	info, _ := s.Info("g")
	runs, _ := info.Details["runs"].([]map[string]any)
	if len(runs) == 0 {
		t.Fatal("no run recorded")
	}
	return runs[0]["id"].(string)
}

// resume resumes run id of graph g, with the run's inputs as the CLI
// gives them, counting the calls each node gets.
func resume(s *session.Session, id string, inputs map[string]string) (string, map[string]int, error) {
	sub := s.Subscribe(4096)
	defer sub.Close()
	in := map[string]string{}
	for k, v := range inputs {
		in[k] = v
	}
	args, _ := json.Marshal(in)
	res, err := s.Call(context.Background(), "g", &node.CallRequest{Tool: "run", Arguments: args, Meta: map[string]any{api.MetaResume: id}})
	calls := map[string]int{}
	for {
		select {
		case ev := <-sub.C:
			if ev.Kind == session.EventCallStart {
				calls[ev.Node]++
			}
			continue
		default:
		}
		break
	}
	if err != nil {
		return "", calls, err
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		return "", calls, errors.New(text)
	}
	return text, calls, nil
}

// TestResumeUsesWholeResult: a step's result over the 64 KiB a run record
// keeps is reused whole by a resume (from the run's journal), never cut.
// Without a state folder (runs in memory, cut) the step runs again.
func TestResumeUsesWholeResult(t *testing.T) {
	big := strings.Repeat("0123456789abcde\n", 588895/16+1)[:588895]
	src := `
inputs: {t: string}
steps:
  big: {call: echo.identity, args: {text: "${inputs.t}"}}
  wait: {call: zz.sleep, args: {ms: 50}, after: big}
output: "${steps.big.text}"
`
	inputs := map[string]string{"t": big}
	args, _ := json.Marshal(inputs)
	for _, tc := range []struct {
		name     string
		dir      string
		bigCalls int
	}{
		{"on disk", t.TempDir(), 0},
		{"in memory", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSessionIn(t, tc.dir)
			addGraph(t, s, "g", src)
			id := interrupted(t, s, string(args))
			out, calls, err := resume(s, id, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(big) || out != big {
				t.Errorf("resumed output is %d bytes (ends %q), want the whole %d", len(out), out[max(0, len(out)-20):], len(big))
			}
			if calls["echo"] != tc.bigCalls {
				t.Errorf("step big ran %d times on resume, want %d", calls["echo"], tc.bigCalls)
			}
		})
	}
}

// TestConcurrentResumesRunOnce: of eight resumes of one run at once,
// exactly one runs the remaining steps; the others are told the run is
// being resumed, by name.
func TestConcurrentResumesRunOnce(t *testing.T) {
	for _, dir := range []string{t.TempDir(), ""} {
		s := newSessionIn(t, dir)
		addGraph(t, s, "g", "steps:\n  a: {call: echo.identity, args: {text: A}}\n  wait: {call: zz.sleep, args: {ms: 300}, after: a}\n")
		id := interrupted(t, s, "{}")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var oks int
		var errs []string
		sub := s.Subscribe(4096)
		for range 8 {
			wg.Go(func() {
				_, _, err := resume(s, id, nil)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					oks++
				} else {
					errs = append(errs, err.Error())
				}
			})
		}
		wg.Wait()
		sleeps := 0
		for len(sub.C) > 0 {
			if ev := <-sub.C; ev.Kind == session.EventCallStart && ev.Node == "zz" {
				sleeps++
			}
		}
		sub.Close()
		if oks != 1 || sleeps != 1 {
			t.Errorf("folder %q: %d resumes ran, step wait ran %d times; want 1 and 1", dir, oks, sleeps)
		}
		want := "run " + id + " is being resumed by another caller; one caller at a time may run it"
		for _, e := range errs {
			if !strings.Contains(e, want) && !strings.Contains(e, "finished; there is nothing to resume") {
				t.Errorf("a refused resume said %q, want %q", e, want)
			}
		}
		if slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, want) }) == false {
			t.Errorf("no resume was refused as concurrent: %q", errs)
		}
		// The run is done: once more is refused as finished.
		if _, _, err := resume(s, id, nil); err == nil || !strings.Contains(err.Error(), "finished; there is nothing to resume") {
			t.Errorf("resume of the finished run: %v", err)
		}
	}
}

// TestStepNotRecordedStopsTheRun: when a step's end cannot be written,
// the steps after it do not start (a resume would run it again), and the
// run fails saying where and what to do.
func TestStepNotRecordedStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	s := newSessionIn(t, dir)
	addGraph(t, s, "g", "steps:\n  a: {call: echo.identity, args: {text: A}}\n  b: {call: zz.sleep, args: {ms: 1}, after: a}\n")
	// The runs folder cannot be made: a file is in its place.
	os.MkdirAll(filepath.Dir(runsDir(dir, "g")), 0o700)
	if err := os.WriteFile(runsDir(dir, "g"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(256)
	defer sub.Close()
	res, err := s.Call(context.Background(), "g", &node.CallRequest{Tool: graphlang.ToolName})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "graph g failed at step a: recording that the step is done: ") || !strings.Contains(text, "not a directory") ||
		!strings.Contains(text, "make "+runsDir(dir, "g")+" writable, with room, then `nerve graph resume g.") {
		t.Errorf("result %v: %s", res.IsError, text)
	}
	for len(sub.C) > 0 {
		if ev := <-sub.C; ev.Kind == session.EventCallStart && ev.Node == "zz" {
			t.Error("step b started though a's end was not recorded")
		}
	}
}
