package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// taskClient speaks the tasks extension to an endpoint over raw HTTP, as a
// client of 2026-07-28 that declares it.
type taskClient struct {
	t         testing.TB
	url, tok  string
	id        int
	noTaskCap bool // leave the extension out of the capabilities
}

func (c *taskClient) meta() string {
	caps := `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	if c.noTaskCap {
		caps = `{"elicitation":{}}`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// do sends method with params (a JSON object's fields, without braces)
// and returns the HTTP status and the result or the error.
func (c *taskClient) do(method, name, params string) (int, map[string]any, map[string]any) {
	c.t.Helper()
	c.id++
	if params != "" {
		params += ","
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, c.id, method, params, c.meta())
	h := map[string]string{"Mcp-Protocol-Version": modernProtocol, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	code, out := post(c.t, c.url, c.tok, body, h)
	m := jsonOf(c.t, out)
	res, _ := m["result"].(map[string]any)
	e, _ := m["error"].(map[string]any)
	return code, res, e
}

func (c *taskClient) call(tool, args string) map[string]any {
	c.t.Helper()
	code, res, e := c.do("tools/call", tool, fmt.Sprintf(`"name":%q,"arguments":%s`, tool, args))
	if code != http.StatusOK || e != nil {
		c.t.Fatalf("tools/call %s: %d %v", tool, code, e)
	}
	return res
}

func (c *taskClient) get(id string) map[string]any {
	c.t.Helper()
	code, res, e := c.do("tasks/get", id, fmt.Sprintf(`"taskId":%q`, id))
	if code != http.StatusOK || e != nil {
		c.t.Fatalf("tasks/get %s: %d %v", id, code, e)
	}
	if res["resultType"] != "complete" || res["taskId"] != id {
		c.t.Fatalf("tasks/get %s answered %v", id, res)
	}
	return res
}

// until polls the task, as a client does, until its status is want (or
// it ends); it fails the test after 20 s.
func (c *taskClient) until(id, want string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := c.get(id)
		if st := res["status"]; st == want || terminal(fmt.Sprint(st)) {
			if st != want {
				c.t.Fatalf("task %s is %v, want %s: %v", id, st, want, res)
			}
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still %v after 20s, want %s", id, res["status"], want)
		}
		time.Sleep(20 * time.Millisecond) // the client's polling interval
	}
}

// releaseGraph is a graph that calls e, asks, and calls e with the answer.
var releaseGraph = "inputs: {v: string}\nsteps:\n  first: {call: e.identity, args: {text: \"building ${inputs.v}\"}}\n  ok: {ask: \"ship ${inputs.v}?\", after: [first]}\n  ship: {call: e.identity, args: {text: \"shipped ${inputs.v}: ${steps.ok.text}\"}}\n"

func graphSpecs() []node.Spec {
	src, _ := json.Marshal(map[string]string{"source": releaseGraph})
	return []node.Spec{{ID: "e", Kind: "identity"}, {ID: "release", Kind: "graph", Options: src}}
}

// answer gives the task's one open question the answer text.
func (c *taskClient) answer(id string, task map[string]any, text string) {
	c.t.Helper()
	qs, _ := task["inputRequests"].(map[string]any)
	if len(qs) != 1 {
		c.t.Fatalf("task %s asks %v, want one question", id, task["inputRequests"])
	}
	for key, q := range qs {
		if msg := q.(map[string]any)["params"].(map[string]any)["message"]; !strings.HasPrefix(fmt.Sprint(msg), "ship ") {
			c.t.Fatalf("question %v, want the gate's", q)
		}
		code, res, e := c.do("tasks/update", id, fmt.Sprintf(`"taskId":%q,"inputResponses":{%q:{"action":"accept","content":{"answer":%q}}}`, id, key, text))
		if code != http.StatusOK || e != nil || res["resultType"] != "complete" || len(res) > 2 {
			c.t.Fatalf("tasks/update: %d %v %v, want an empty ack", code, res, e)
		}
	}
}

func resultTextOf(t testing.TB, task map[string]any) string {
	t.Helper()
	res, _ := task["result"].(map[string]any)
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			b.WriteString(fmt.Sprint(m["text"]))
		}
	}
	return b.String()
}

// TestTasks: a client of 2026-07-28 that declares the tasks extension gets
// a task for a graph's run, follows it with tasks/get, answers its ask:
// gate with tasks/update and reads its result inlined; a quick tool
// answers as usual; the methods keep to the extension's rules.
func TestTasks(t *testing.T) {
	s := newSession(t)
	for _, sp := range graphSpecs() {
		addNode(t, s, sp)
	}
	ep := startEndpoint(t, s)
	c := &taskClient{t: t, url: ep.URL("test"), tok: ep.Token()}

	quick := c.call("e.identity", `{"text":"now"}`)
	if quick["resultType"] != "complete" || quick["taskId"] != nil {
		t.Errorf("a quick call: %v, want its result", quick)
	}

	created := c.call("release.run", `{"v":"v1"}`)
	id, _ := created["taskId"].(string)
	for _, k := range []string{"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"} {
		if _, ok := created[k]; ok {
			t.Errorf("CreateTaskResult carries %q: %v", k, created)
		}
	}
	if created["resultType"] != "task" || id == "" || created["status"] != "working" || created["ttlMs"] == nil || created["pollIntervalMs"] == nil || created["createdAt"] == nil {
		t.Fatalf("a graph's run: %v, want a CreateTaskResult", created)
	}
	asked := c.until(id, "input_required")
	c.answer(id, asked, "yes")
	done := c.until(id, "completed")
	if got := resultTextOf(t, done); got != "shipped v1: yes" {
		t.Errorf("result %q, want the run's output with the answer (%v)", got, done)
	}
	if code, res, _ := c.do("tasks/cancel", id, fmt.Sprintf(`"taskId":%q`, id)); code != http.StatusOK || res["resultType"] != "complete" {
		t.Errorf("tasks/cancel of an ended task: %d %v, want the empty ack", code, res)
	}

	// Cancelled while it waits at the gate.
	id2 := c.call("release.run", `{"v":"v2"}`)["taskId"].(string)
	c.until(id2, "input_required")
	if code, res, _ := c.do("tasks/cancel", id2, fmt.Sprintf(`"taskId":%q`, id2)); code != http.StatusOK || res["resultType"] != "complete" {
		t.Errorf("tasks/cancel: %d %v", code, res)
	}
	c.until(id2, "cancelled")

	for _, tc := range []struct {
		name, method, mcpName, params string
		noCap                         bool
		status, code                  int
	}{
		{"unknown task", "tasks/get", "nope", `"taskId":"nope"`, false, http.StatusBadRequest, -32602},
		{"without the extension", "tasks/get", id, fmt.Sprintf(`"taskId":%q`, id), true, http.StatusBadRequest, -32021},
		{"Mcp-Name not the taskId", "tasks/get", "other", fmt.Sprintf(`"taskId":%q`, id), false, http.StatusBadRequest, -32020},
		{"tasks/list is not", "tasks/list", "", "", false, http.StatusNotFound, -32601},
		{"tasks/result is not", "tasks/result", id, fmt.Sprintf(`"taskId":%q`, id), false, http.StatusNotFound, -32601},
	} {
		c.noTaskCap = tc.noCap
		code, _, e := c.do(tc.method, tc.mcpName, tc.params)
		c.noTaskCap = false
		if code != tc.status || e == nil || e["code"] != float64(tc.code) {
			t.Errorf("%s: %d %v, want %d and %d", tc.name, code, e, tc.status, tc.code)
		}
	}

	// Without the extension, a graph's run answers as before: here its
	// gate asks through input_required.
	c.noTaskCap = true
	res := c.call("release.run", `{"v":"v3"}`)
	if res["resultType"] != "input_required" {
		t.Errorf("without the extension: %v, want the run itself (input_required at its gate)", res)
	}
}

// TestTaskOutlivesRestart: a graph's run started as a task, interrupted
// at its gate by the session closing (the daemon stopping), is taken up
// when the session comes back (OpenTasks): the same task id answers,
// asks again, and completes, the run finished from its journal.
func TestTaskOutlivesRestart(t *testing.T) {
	dir := t.TempDir()
	s1 := session.New("test", all.Registry(nil), &session.Options{Dir: dir})
	for _, sp := range graphSpecs() {
		addNode(t, s1, sp)
	}
	ep1 := startEndpoint(t, s1)
	c := &taskClient{t: t, url: ep1.URL("test"), tok: ep1.Token()}
	id := c.call("release.run", `{"v":"v9"}`)["taskId"].(string)
	c.until(id, "input_required")
	st1 := openTasks(s1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// In one process, the first run must have ended for the second to
	// claim it; a daemon that stops ends with all of it.
	select {
	case <-st1.gone:
	case <-ctx.Done():
		t.Fatal("the tasks of the closed session still run")
	}

	s2 := session.New("test", all.Registry(nil), &session.Options{Dir: dir})
	t.Cleanup(func() { s2.Close(context.Background()) })
	for _, sp := range graphSpecs() {
		addNode(t, s2, sp)
	}
	OpenTasks(s2, nil)
	ep2 := startEndpoint(t, s2)
	c.url, c.tok = ep2.URL("test"), ep2.Token()
	asked := c.until(id, "input_required")
	c.answer(id, asked, "after the restart")
	done := c.until(id, "completed")
	if got := resultTextOf(t, done); got != "shipped v9: after the restart" {
		t.Errorf("result %q (%v)", got, done)
	}
	g, _ := s2.Node("release")
	var runs []struct {
		ID string `json:"id"`
	}
	b, _ := json.Marshal(g.Info().Details["runs"])
	_ = json.Unmarshal(b, &runs)
	if len(runs) != 1 {
		t.Fatalf("runs %s, want the one run, resumed", b)
	}
	rec, err := g.(interface {
		RunRecord(string) (json.RawMessage, error)
	}).RunRecord(runs[0].ID)
	if err != nil || !strings.Contains(string(rec), `"resumed":1`) || !strings.Contains(string(rec), `"state":"finished"`) {
		t.Errorf("run record %s (%v): want it resumed once from its journal", rec, err)
	}
}
