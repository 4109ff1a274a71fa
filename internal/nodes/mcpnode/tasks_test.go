package mcpnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/mcptasks"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestLiftResult: what the SDK would drop of tasks is kept in _meta, and
// nothing else is touched.
func TestLiftResult(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		changed   bool
		shape, id string
	}{
		{name: "extension", in: `{"resultType":"task","taskId":"t1","status":"working","ttlMs":60000,"pollIntervalMs":50,"createdAt":"x","lastUpdatedAt":"x"}`, changed: true, shape: taskShapeExtension, id: "t1"},
		{name: "2025-11-25", in: `{"task":{"taskId":"t2","status":"working","ttl":60000,"pollInterval":1000},"_meta":{"k":"v"}}`, changed: true, shape: taskShapeV1, id: "t2"},
		{name: "a tool result that talks of tasks", in: `{"content":[{"type":"text","text":"the \"task\" is done"}],"task":{"taskId":"x"}}`},
		{name: "tasks/get", in: `{"resultType":"complete","taskId":"t1","status":"completed","result":{"content":[]}}`},
		{name: "plain", in: `{"content":[{"type":"text","text":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := liftResult([]byte(tc.in))
			if changed != tc.changed {
				t.Fatalf("changed = %v, want %v (%s)", changed, tc.changed, out)
			}
			if !changed {
				return
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			lt, ok := taskOf(&res)
			if !ok || lt.Shape != tc.shape {
				t.Fatalf("task = %+v, %v; want shape %s", lt, ok, tc.shape)
			}
			var tk task
			if err := json.Unmarshal(lt.Task, &tk); err != nil || tk.TaskID != tc.id {
				t.Errorf("task %s, %v; want id %s", lt.Task, err, tc.id)
			}
			if tc.shape == taskShapeV1 && res.Meta["k"] != "v" {
				t.Errorf("the result's own _meta was lost: %v", res.Meta)
			}
		})
	}
	in := `{"tools":[{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},{"name":"b","inputSchema":{"type":"object"}}]}`
	out, changed := liftResult([]byte(in))
	if !changed {
		t.Fatal("tools/list with execution: unchanged")
	}
	var lr mcp.ListToolsResult
	if err := json.Unmarshal(out, &lr); err != nil {
		t.Fatal(err)
	}
	if got := taskSupport(lr.Tools[0]); got != "required" {
		t.Errorf("taskSupport(a) = %q", got)
	}
	if got := taskSupport(lr.Tools[1]); got != "" {
		t.Errorf("taskSupport(b) = %q", got)
	}
	msg := liftMessage([]byte(`{"jsonrpc":"2.0","id":3,"result":` + `{"resultType":"task","taskId":"t9","status":"working"}` + `}`))
	if !strings.Contains(string(msg), metaTask) || !strings.Contains(string(msg), `"id":3`) {
		t.Errorf("liftMessage = %s", msg)
	}
}

// taskNodes are nodes of fixtures/mcpserver --tasks (the tasks extension)
// over stdio at 2026-07-28 and over stateless HTTP, and over stateful
// HTTP at 2025-11-25 (nerve declares the extension in either era).
func taskNodes(t *testing.T, ev *events) map[string]*Node {
	bin := testutil.BuildBinary(t, "./fixtures/mcpserver")
	modern := serveFixture(t, "--tasks", "--protocol", ModernProtocol)
	legacy := serveFixture(t, "--tasks")
	out := map[string]*Node{}
	for name, spec := range map[string]node.Spec{
		"stdio":       stdioSpec("tasks", []string{bin, "--tasks", "--protocol", ModernProtocol}),
		"http":        {ID: "tasks", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"` + modern + `"}`)},
		"http-legacy": {ID: "tasks", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"` + legacy + `","protocol":"2025-11-25"}`)},
	} {
		n, err := newNode(spec, ev.env(), defaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustStart(t, n)
		out[name] = n
	}
	return out
}

// progressOf collects a call's progress messages.
type progressOf struct {
	mu   sync.Mutex
	msgs []string
	// first is closed at the first progress event.
	first chan struct{}
	once  sync.Once
}

func newProgress() *progressOf { return &progressOf{first: make(chan struct{})} }

func (p *progressOf) observe(e node.CallEvent) {
	if e.Kind != node.EventProgress {
		return
	}
	p.mu.Lock()
	p.msgs = append(p.msgs, e.Message)
	p.mu.Unlock()
	p.once.Do(func() { close(p.first) })
}

func (p *progressOf) all() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.msgs, " | ")
}

// TestTaskPolledToCompletion: a call the server turns into a task is
// followed to its result, its status reported as progress; a task that
// waits for the person is answered through the node's hooks.
func TestTaskPolledToCompletion(t *testing.T) {
	ev := newEvents()
	h := &answering{content: map[string]any{"answer": "blue"}}
	ev.hooks = h
	for name, n := range taskNodes(t, ev) {
		t.Run(name, func(t *testing.T) {
			p := newProgress()
			got := text(t, callOK(t, n, "task_job", `{"steps":3,"ms":60}`, p.observe))
			if got != "job done after 3 steps" {
				t.Errorf("task_job = %q", got)
			}
			if all := p.all(); !strings.Contains(all, "working") || !strings.Contains(all, "step") {
				t.Errorf("progress = %q, want the task's status", all)
			}
			if got := text(t, callOK(t, n, "task_ask", `{"message":"Colour?"}`, nil)); got != "user answered: blue" {
				t.Errorf("task_ask = %q", got)
			}
			if q := h.questions(); len(q) == 0 || q[len(q)-1] != "elicit: Colour?" {
				t.Errorf("the hooks were asked %q", q)
			}
		})
	}
}

// TestTaskCancelled: Ctrl-C (the call's context ends) on a call that runs
// as a task sends tasks/cancel; the server's task ends cancelled.
func TestTaskCancelled(t *testing.T) {
	ev := newEvents()
	url := serveFixture(t, "--tasks", "--protocol", ModernProtocol)
	n, err := newNode(node.Spec{ID: "tasks", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"` + url + `"}`)}, ev.env(), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	ctx, cancel := context.WithCancel(t.Context())
	p := newProgress()
	errc := make(chan error, 1)
	go func() {
		_, err := n.CallTool(ctx, &node.CallRequest{Tool: "task_job", Arguments: json.RawMessage(`{"steps":1000,"ms":100}`), Observe: p.observe})
		errc <- err
	}()
	select {
	case <-p.first:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress from the task")
	}
	cancel()
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end after its context did")
	}
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the server was told") {
		t.Fatalf("cancelled call: %v", err)
	}
	id := strings.Fields(strings.TrimPrefix(p.all(), "task "))[0]

	// Ask the server, as another client, what became of the task.
	c := mcp.NewClient(&mcp.Implementation{Name: "observer", Version: "1"}, nil)
	registerTaskMethods(c)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got, err := mcp.CallCustomMethod[*mcptasks.IDParams, *task](t.Context(), cs, "tasks/get", &mcptasks.IDParams{TaskID: id})
	if err != nil || got.Status != "cancelled" {
		t.Errorf("task %s after the cancel: %+v, %v; want cancelled", id, got, err)
	}
}

// TestTaskTypeScriptSDK: the TypeScript SDK's simpleTaskInteractive
// example speaks the experimental tasks of MCP 2025-11-25 (a "task"
// parameter the client sends for tools whose execution.taskSupport is
// "required", tasks/get, tasks/result, which delivers the server's
// elicitation and sampling as requests while it waits). Both of its tools
// are called through a node, the person's answers given by its hooks.
func TestTaskTypeScriptSDK(t *testing.T) {
	addr := freeAddr(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	serveHTTP(t, addr, npmfix.SDKExampleServer(t, "simpleTaskInteractive.js"), "PORT="+port)
	ev := newEvents()
	h := &answering{content: map[string]any{"confirm": true}, text: "Leaves fall softly"}
	ev.hooks = h
	n, err := newNode(node.Spec{ID: "ts", Kind: Kind, Options: json.RawMessage(fmt.Sprintf(`{"transport":"http","url":"http://localhost:%s/mcp"}`, port))}, ev.env(), defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	if v := n.NegotiatedProtocolVersion(); v != LegacyProtocol {
		t.Errorf("negotiated %s, want %s", v, LegacyProtocol)
	}
	p := newProgress()
	if got := text(t, callOK(t, n, "confirm_delete", `{"filename":"notes.txt"}`, p.observe)); got != "Deleted 'notes.txt'" {
		t.Errorf("confirm_delete = %q", got)
	}
	if !strings.Contains(p.all(), "task ") {
		t.Errorf("progress = %q, want the task's status", p.all())
	}
	if got := text(t, callOK(t, n, "write_haiku", `{"topic":"autumn"}`, nil)); !strings.Contains(got, "Leaves fall softly") {
		t.Errorf("write_haiku = %q", got)
	}
	if q := h.questions(); len(q) != 2 || !strings.Contains(q[0], "notes.txt") || q[1] != "sample" {
		t.Errorf("the hooks were asked %q", q)
	}
}
