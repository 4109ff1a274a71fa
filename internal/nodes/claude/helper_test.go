package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// rig is a claude node on the fake claude, with what the test inspects.
type rig struct {
	t       *testing.T
	n       *Node
	spec    node.Spec
	home    string // FAKECLAUDE_HOME: the conversations
	record  string // FAKECLAUDE_RECORD: argv and configs per run
	dir     string // Env.Dir
	mu      sync.Mutex
	saved   json.RawMessage
	changes chan node.State
}

// rigOpt changes the spec, or the env the node is built with.
type rigOpt func(*node.Spec, *node.Env)

func withEnv(k, v string) rigOpt {
	return func(s *node.Spec, _ *node.Env) { s.Env[k] = v }
}

func withOptions(o Options) rigOpt {
	return func(s *node.Spec, _ *node.Env) { s.Options, _ = json.Marshal(o) }
}

func newRig(t *testing.T, opts ...rigOpt) *rig {
	t.Helper()
	bin := testutil.BuildBinary(t, "./fixtures/fakeclaude")
	base := t.TempDir()
	r := &rig{t: t, home: filepath.Join(base, "home"), record: filepath.Join(base, "record"), dir: filepath.Join(base, "node")}
	os.MkdirAll(r.record, 0o700)
	r.spec = node.Spec{ID: "cc", Kind: Kind, Command: []string{bin},
		Env: map[string]string{"FAKECLAUDE_HOME": r.home, "FAKECLAUDE_RECORD": r.record}}
	var env node.Env
	for _, o := range opts {
		o(&r.spec, &env)
	}
	r.build(env)
	return r
}

// build (re)makes the node from r.spec, with the state saved so far, as a
// restarted daemon does.
func (r *rig) build(base node.Env) {
	r.t.Helper()
	r.mu.Lock()
	r.spec.State = r.saved
	r.mu.Unlock()
	r.changes = make(chan node.State, 64)
	env := base
	env.Session, env.Dir = "default", r.dir
	env.OnState = func(from, to node.State, reason string) { r.changes <- to }
	env.SaveState = func(s json.RawMessage) error {
		r.mu.Lock()
		r.saved = append(json.RawMessage(nil), s...)
		r.mu.Unlock()
		return nil
	}
	n, err := New(r.spec, env)
	if err != nil {
		r.t.Fatalf("building the node: %v", err)
	}
	r.n = n.(*Node)
	r.n.stopGrace = time.Second
	r.t.Cleanup(func() { r.n.Stop(context.Background()) })
}

func (r *rig) start() {
	r.t.Helper()
	if err := r.n.Start(context.Background()); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
}

func (r *rig) state() persisted {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p persisted
	json.Unmarshal(r.saved, &p)
	return p
}

// call asks message and returns the result and every event observed.
func (r *rig) call(ctx context.Context, message string) (*mcp.CallToolResult, []node.CallEvent, error) {
	var mu sync.Mutex
	var evs []node.CallEvent
	args, _ := json.Marshal(map[string]string{"message": message})
	res, err := r.n.CallTool(ctx, &node.CallRequest{Tool: ToolName, Arguments: args, Observe: func(ev node.CallEvent) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}})
	mu.Lock()
	defer mu.Unlock()
	return res, evs, err
}

func (r *rig) ask(message string) (string, []node.CallEvent) {
	r.t.Helper()
	res, evs, err := r.call(context.Background(), message)
	if err != nil {
		r.t.Fatalf("ask %q: %v", message, err)
	}
	if res.IsError {
		r.t.Fatalf("ask %q: error result %q", message, resultText(res))
	}
	return resultText(res), evs
}

// runs returns what the fake recorded of each of its runs, oldest first.
func (r *rig) runs() []fakeRun {
	r.t.Helper()
	entries, _ := os.ReadDir(r.record)
	var runs []fakeRun
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.record, e.Name()))
		if err != nil {
			r.t.Fatal(err)
		}
		var fr fakeRun
		if err := json.Unmarshal(data, &fr); err != nil {
			r.t.Fatal(err)
		}
		info, _ := e.Info()
		fr.mod = info.ModTime()
		runs = append(runs, fr)
	}
	// pids are not ordered; modification times are, closely enough here
	// since runs are sequential.
	for i := 1; i < len(runs); i++ {
		for j := i; j > 0 && runs[j].mod.Before(runs[j-1].mod); j-- {
			runs[j], runs[j-1] = runs[j-1], runs[j]
		}
	}
	return runs
}

func (r *rig) lastRun() fakeRun {
	r.t.Helper()
	runs := r.runs()
	if len(runs) == 0 {
		r.t.Fatal("the fake claude recorded no run")
	}
	return runs[len(runs)-1]
}

type fakeRun struct {
	Argv       []string `json:"argv"`
	MCPConfigs []any    `json:"mcp_configs"`
	Pid        int      `json:"pid"`
	mod        time.Time
}

// flag returns the value after name in argv, or "" (and false).
func (f fakeRun) flag(name string) (string, bool) {
	for i, a := range f.Argv {
		if a == name {
			if i+1 < len(f.Argv) {
				return f.Argv[i+1], true
			}
			return "", true
		}
	}
	return "", false
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitEvent calls the node with message in the background and returns once
// an observed event satisfies cond; the call's outcome arrives on done.
type outcome struct {
	res *mcp.CallToolResult
	err error
}

func (r *rig) callUntil(ctx context.Context, message string, cond func(node.CallEvent) bool) <-chan outcome {
	r.t.Helper()
	seen := make(chan struct{})
	var once sync.Once
	done := make(chan outcome, 1)
	args, _ := json.Marshal(map[string]string{"message": message})
	go func() {
		res, err := r.n.CallTool(ctx, &node.CallRequest{Tool: ToolName, Arguments: args, Observe: func(ev node.CallEvent) {
			if cond(ev) {
				once.Do(func() { close(seen) })
			}
		}})
		done <- outcome{res, err}
	}()
	select {
	case <-seen:
	case o := <-done:
		r.t.Fatalf("call %q ended before the awaited event: %v %v", message, o.err, o.res)
	case <-time.After(30 * time.Second):
		r.t.Fatalf("timed out waiting for an event of call %q", message)
	}
	return done
}

func wait(t *testing.T, done <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for the call to end")
	}
	return outcome{}
}

func isText(s string) func(node.CallEvent) bool {
	return func(ev node.CallEvent) bool { return ev.Kind == node.EventText && ev.Text == s }
}
