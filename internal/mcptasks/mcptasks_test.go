package mcptasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeTasks knows one task, "t1", waiting for one answer.
type fakeTasks struct {
	answered  mcp.InputResponseMap
	cancelled bool
}

func (f *fakeTasks) Get(_ context.Context, id string) (*DetailedTask, error) {
	if id != "t1" {
		return nil, ErrUnknown(id, "not here")
	}
	return &DetailedTask{Task: Task{TaskID: id, Status: InputRequired, CreatedAt: "c", LastUpdatedAt: "u", TTLMs: 1000},
		InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "ok?"}}}, nil
}

func (f *fakeTasks) Update(_ context.Context, id string, answers mcp.InputResponseMap) error {
	if id != "t1" {
		return ErrUnknown(id, "not here")
	}
	f.answered = answers
	return nil
}

func (f *fakeTasks) Cancel(_ context.Context, id string) error {
	if id != "t1" {
		return ErrUnknown(id, "not here")
	}
	f.cancelled = true
	return nil
}

// TestRegister serves the three methods over the SDK's stateless HTTP
// handler and checks what a client of 2026-07-28 reads.
func TestRegister(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Extensions: map[string]any{Extension: map[string]any{}}},
	})
	f := &fakeTasks{}
	if err := Register(srv, f); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()
	call := func(method, params string, declare bool) (int, map[string]any) {
		caps := `{}`
		if declare {
			caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`, method, params, caps)
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": "t1"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			var m map[string]any
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
				return resp.StatusCode, m
			}
		}
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		return 0, nil
	}

	_, m := call("tasks/get", `"taskId":"t1"`, true)
	res, _ := m["result"].(map[string]any)
	qs, _ := res["inputRequests"].(map[string]any)
	if res["resultType"] != "complete" || res["status"] != InputRequired || res["ttlMs"] != float64(1000) || qs["q"] == nil {
		t.Errorf("tasks/get: %v", m)
	}
	if code, m := call("tasks/get", `"taskId":"t1"`, false); code != http.StatusBadRequest || m["error"].(map[string]any)["code"] != float64(mcp.CodeMissingRequiredClientCapabilities) {
		t.Errorf("tasks/get without the capability: %d %v, want 400 and -32021", code, m)
	}
	if _, m := call("tasks/get", `"taskId":"t2"`, true); m["error"] == nil || m["error"].(map[string]any)["code"] != float64(-32602) {
		t.Errorf("an unknown task: %v, want -32602", m)
	}
	if _, m := call("tasks/update", `"taskId":"t1","inputResponses":{"q":{"action":"accept"}}`, true); m["result"].(map[string]any)["resultType"] != "complete" || f.answered["q"] == nil {
		t.Errorf("tasks/update: %v, answered %v", m, f.answered)
	}
	if _, m := call("tasks/cancel", `"taskId":"t1"`, true); m["result"].(map[string]any)["resultType"] != "complete" || !f.cancelled {
		t.Errorf("tasks/cancel: %v", m)
	}
	if code, m := call("tasks/list", `"cursor":""`, true); code != http.StatusNotFound || m["error"].(map[string]any)["code"] != float64(-32601) {
		t.Errorf("tasks/list: %d %v, want 404 and -32601", code, m)
	}
}
