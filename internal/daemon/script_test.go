package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/pkg/api"
)

// TestScriptRoute: POST …/script runs a script against the session, its
// calls in the call log under the script's run and its client; GET shows
// the run_script tool; an empty script or an unknown session is the
// client's mistake.
func TestScriptRoute(t *testing.T) {
	dir := t.TempDir()
	d := persistent(t, dir)
	hc := socketClient(t, serveSocket(t, d))
	do := func(method, path string, body any) (int, []byte) {
		t.Helper()
		var rd bytes.Buffer
		if body != nil {
			json.NewEncoder(&rd).Encode(body)
		}
		req, _ := http.NewRequest(method, "http://nerve/v1/sessions"+path, &rd)
		req.Header.Set(api.HeaderCaller, "cli")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		return resp.StatusCode, out.Bytes()
	}
	if code, body := do("POST", "/default/nodes", api.Spec{ID: "echo", Kind: "identity"}); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("adding a node: %d %s", code, body)
	}
	code, body := do("POST", "/default/script", api.ScriptRequest{Script: "print('p')\nresult = echo.identity(text='x')", Filename: "t.star"})
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Result  string
			Printed string
			Calls   int
			Run     string
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(body, &res); code != 200 || err != nil || res.IsError || res.StructuredContent.Result != "x" || res.StructuredContent.Printed != "p\n" {
		t.Fatalf("script: %d %s", code, body)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "calls.jsonl"))
	var rec CallRecord
	if err := json.Unmarshal(bytes.TrimSpace(log), &rec); err != nil || rec.Caller == nil ||
		rec.Caller.Kind != codemode.CallerKind || rec.Caller.Name != "cli" || rec.Caller.Run != res.StructuredContent.Run || rec.Caller.Step != "2:23" {
		t.Errorf("call log: %v %s", err, log)
	}
	if code, body := do("POST", "/default/script", api.ScriptRequest{Script: "x = 1\nx.nope", Filename: "t.star"}); code != 200 || !strings.Contains(string(body), `"isError":true`) || !strings.Contains(string(body), `"line":2`) {
		t.Errorf("failing script: %d %s", code, body)
	}
	if code, body := do("POST", "/default/script", api.ScriptRequest{Script: " \n"}); code != 400 || !strings.Contains(string(body), "the script is empty") {
		t.Errorf("empty script: %d %s", code, body)
	}
	if code, _ := do("POST", "/nosuch/script", api.ScriptRequest{Script: "x = 1"}); code != 404 {
		t.Errorf("unknown session: %d", code)
	}
	code, body = do("GET", "/default/script?tools=echo.*", nil)
	var tool struct{ Name, Description string }
	if err := json.Unmarshal(body, &tool); code != 200 || err != nil || tool.Name != codemode.ToolName || !strings.Contains(tool.Description, "echo.identity(text: str) -> str") {
		t.Errorf("run_script tool: %d %s", code, body)
	}
}
