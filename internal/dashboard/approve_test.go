package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// boardOnly is the daemon's approver with nobody but the dashboard to
// ask: the call waits for a page's answer or its ask timeout.
func boardOnly(d *Dashboard) session.Approver {
	return func(ctx context.Context, req *session.ApprovalRequest) (session.Approval, error) {
		var mu sync.Mutex
		got := make(chan session.Approval, 1)
		exp, _ := ctx.Deadline()
		closePrompt := d.Offer("default", req, exp, func(a session.Approval) bool {
			mu.Lock()
			defer mu.Unlock()
			if len(got) > 0 {
				return false
			}
			a.By = "dashboard"
			got <- a
			return true
		})
		select {
		case a := <-got:
			closePrompt(true, "answered by the dashboard")
			return a, nil
		case <-ctx.Done():
			mu.Lock()
			got <- session.Approval{} // no answer is taken from here on
			mu.Unlock()
			closePrompt(false, "nobody approved it in time")
			return session.Approval{}, ctx.Err()
		}
	}
}

// askFixture is the fixture with a policy that asks about echo's calls
// of nobody but the dashboard, for timeout.
func askFixture(t *testing.T, timeout time.Duration) *fixture {
	t.Helper()
	f := newFixture(t)
	f.s.SetApprover(boardOnly(f.d))
	if err := f.s.SetSettings(session.Settings{Policy: "echo.identity=ask", AskTimeout: api.Duration(timeout)}); err != nil {
		t.Fatal(err)
	}
	return f
}

// agentCall calls echo's tool as an MCP client would, in the background.
func (f *fixture) agentCall(args string) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerMCP, Name: "agent"})
		res, err := f.s.Call(ctx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(args)})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	return done
}

func (f *fixture) answer(t *testing.T, c *http.Client, csrf, session, id, answer string) (int, string) {
	t.Helper()
	hdr := map[string]string{"Origin": f.base, CSRFHeader: csrf, "Content-Type": "application/json"}
	resp, body := do(t, c, "POST", f.base+"/ui/api/sessions/"+session+"/approvals/"+id, hdr, `{"answer": "`+answer+`"}`)
	return resp.StatusCode, body
}

func promptOf(t *testing.T, data json.RawMessage) prompt {
	t.Helper()
	var p prompt
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func closedOf(data json.RawMessage) promptClosed {
	var c promptClosed
	_ = json.Unmarshal(data, &c)
	return c
}

func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestApprovalOnEveryPage: a held call shows on every open page — one
// open before, one after — with its node, tool, caller and exact
// arguments; the first page's answer runs the call, the other page's is
// refused, and both pages see the prompt go, saying why.
func TestApprovalOnEveryPage(t *testing.T) {
	f := askFixture(t, time.Minute)
	c1, csrf1 := f.visit(t)
	s1 := f.stream(t, c1)
	if f.d.Watched("other") || !f.d.Watched("default") {
		t.Error("Watched does not tell the session with a page open")
	}
	// A right-to-left override and a zero width space shown as escapes,
	// markup as text. (Numbers as written: TestShownArgs.)
	res := f.agentCall(`{"text": "rm -rf / ` + "\u202e<b>txt.exe</b> x\u200by" + `"}`)
	p := promptOf(t, s1.until(t, "approval", func(json.RawMessage) bool { return true }))
	want := "{\n  \"text\": \"rm -rf / \\u202e<b>txt.exe</b> x\\u200by\"\n}"
	if p.Node != "echo" || p.Tool != "identity" || p.Caller != "mcp:agent" || p.Rule != "echo.identity=ask" || p.Arguments != want || p.Remember != 10 {
		t.Errorf("the prompt: %+v\narguments:\n%s\nwant:\n%s", p, p.Arguments, want)
	}
	if left := time.Until(p.Expires); left <= 0 || left > time.Minute {
		t.Errorf("the prompt expires in %v; want within the ask timeout", left)
	}

	c2, csrf2 := f.visit(t)
	s2 := f.stream(t, c2)
	var list []prompt
	if err := json.Unmarshal(s2.until(t, "approvals", func(json.RawMessage) bool { return true }), &list); err != nil || len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("a page opened later is shown %+v, want the prompt %s", list, p.ID)
	}

	if st, body := f.answer(t, c2, csrf2, "default", p.ID, "allow"); st != http.StatusOK {
		t.Fatalf("the answer answered %d %s", st, body)
	}
	if r := <-res; r.IsError || !strings.Contains(text(r), "txt.exe") {
		t.Errorf("the allowed call: %q (isError %v)", text(r), r.IsError)
	}
	st, body := f.answer(t, c1, csrf1, "default", p.ID, "deny")
	if st != http.StatusConflict || !strings.Contains(body, "answered already (answered by the dashboard)") {
		t.Errorf("the second page's answer answered %d %s; want 409, answered already", st, body)
	}
	for _, s := range []*sse{s1, s2} {
		got := closedOf(s.until(t, "approval_closed", func(json.RawMessage) bool { return true }))
		if got.ID != p.ID || !got.Answered || got.Why != "answered by the dashboard" {
			t.Errorf("the prompt closed with %+v", got)
		}
	}
	calls := f.calls()
	if len(calls) != 1 || calls[0].Decision == nil || calls[0].Decision.Outcome != api.OutcomeApproved || calls[0].Decision.By != "dashboard" {
		t.Errorf("the call log: %+v", calls)
	}
}

// TestApprovalAnswerRefused: an answer is an action of the page (cookie,
// Origin, CSRF token) bound to a prompt that waits, of its session.
func TestApprovalAnswerRefused(t *testing.T) {
	f := askFixture(t, 300*time.Millisecond)
	c, csrf := f.visit(t)
	s := f.stream(t, c)
	res := f.agentCall(`{"text": "late"}`)
	p := promptOf(t, s.until(t, "approval", func(json.RawMessage) bool { return true }))

	u := f.base + "/ui/api/sessions/default/approvals/" + p.ID
	for name, tt := range map[string]struct {
		hdr  map[string]string
		body string
		want int
	}{
		"no CSRF header":       {map[string]string{"Origin": f.base, "Content-Type": "application/json"}, `{"answer": "allow"}`, http.StatusForbidden},
		"another Origin":       {map[string]string{"Origin": "http://127.0.0.1:1", CSRFHeader: csrf, "Content-Type": "application/json"}, `{"answer": "allow"}`, http.StatusForbidden},
		"another site's fetch": {map[string]string{"Origin": f.base, CSRFHeader: csrf, "Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, `{"answer": "allow"}`, http.StatusForbidden},
		"a form":               {map[string]string{"Origin": f.base, CSRFHeader: csrf, "Content-Type": "text/plain"}, `{"answer": "allow"}`, http.StatusUnsupportedMediaType},
		"no such answer":       {map[string]string{"Origin": f.base, CSRFHeader: csrf, "Content-Type": "application/json"}, `{"answer": "yes"}`, http.StatusBadRequest},
	} {
		if resp, body := do(t, c, "POST", u, tt.hdr, tt.body); resp.StatusCode != tt.want {
			t.Errorf("%s: %d %s, want %d", name, resp.StatusCode, body, tt.want)
		}
	}
	if resp, _ := do(t, browser(t), "POST", u, map[string]string{"Origin": f.base, CSRFHeader: csrf, "Content-Type": "application/json"}, `{"answer": "allow"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an answer without the cookie: %d, want 401", resp.StatusCode)
	}
	if st, body := f.answer(t, c, csrf, "default", "0123456789abcdef", "allow"); st != http.StatusNotFound || !strings.Contains(body, "no call") {
		t.Errorf("an unknown id: %d %s, want 404", st, body)
	}
	if st, _ := f.answer(t, c, csrf, "work", p.ID, "allow"); st != http.StatusNotFound {
		t.Errorf("the id under another session: %d, want 404", st)
	}

	// Nobody answered in time: the prompt goes, the call is refused, and
	// an answer now is too late.
	got := closedOf(s.until(t, "approval_closed", func(json.RawMessage) bool { return true }))
	if got.ID != p.ID || got.Answered || got.Why != "nobody approved it in time" {
		t.Errorf("the prompt closed with %+v", got)
	}
	if r := <-res; !r.IsError || !strings.Contains(text(r), "nobody approved this call to echo.identity within 300ms") {
		t.Errorf("the unanswered call: %q (isError %v)", text(r), r.IsError)
	}
	if st, body := f.answer(t, c, csrf, "default", p.ID, "allow"); st != http.StatusGone || !strings.Contains(body, "nobody approved it in time") {
		t.Errorf("an answer after the timeout: %d %s, want 410 saying why", st, body)
	}
}

// TestApprovalDenied: a page's deny refuses the call, saying where.
func TestApprovalDenied(t *testing.T) {
	f := askFixture(t, time.Minute)
	c, csrf := f.visit(t)
	s := f.stream(t, c)
	res := f.agentCall(`{"text": "no"}`)
	p := promptOf(t, s.until(t, "approval", func(json.RawMessage) bool { return true }))
	if st, body := f.answer(t, c, csrf, "default", p.ID, "deny"); st != http.StatusOK {
		t.Fatalf("deny answered %d %s", st, body)
	}
	if r := <-res; !r.IsError || !strings.Contains(text(r), "(at dashboard) refused it: denied on the dashboard. It did not run.") {
		t.Errorf("the denied call: %q (isError %v)", text(r), r.IsError)
	}
}

func TestShownArgs(t *testing.T) {
	big := `{"s": "` + strings.Repeat("a", maxShownArgs) + `"}`
	for _, tt := range []struct {
		in, want string
		cut      bool
	}{
		{``, `{}`, false},
		{`{}`, `{}`, false},
		{` [ ] `, `[]`, false},
		// Numbers as written, keys in order and twice, HTML escapes read.
		{`{"n":12345678901234567890123,"z":1e400,"f":2.50,"p":"/a","p":"/etc/passwd","cmd":"a \u003e b \u0026\u0026 c","q":"\"\\"}`,
			"{\n  \"n\": 12345678901234567890123,\n  \"z\": 1e400,\n  \"f\": 2.50,\n  \"p\": \"/a\",\n  \"p\": \"/etc/passwd\",\n  \"cmd\": \"a > b && c\",\n  \"q\": \"\\\"\\\\\"\n}", false},
		{`{"a":[1,{"b":null,"c":[]},true,"\u00e9"]}`, "{\n  \"a\": [\n    1,\n    {\n      \"b\": null,\n      \"c\": []\n    },\n    true,\n    \"é\"\n  ]\n}", false},
		// What does not show: as escapes; a control as JSON writes it.
		{`{"a":"é` + "\u2066" + `b` + "\U000E0041" + `\u0007\t\u00a0"}`, "{\n  \"a\": \"é\\u2066b\\udb40\\udc41\\u0007\\t\\u00a0\"\n}", false},
		// Invalid UTF-8: as a JSON reader takes it.
		{"{\"a\":\"\xff\"}", "{\n  \"a\": \"\ufffd\"\n}", false},
		{`not json` + "\x07", `not json\u0007`, false},
		{big, "", true},
	} {
		got, cut := shownArgs(json.RawMessage(tt.in))
		if tt.cut {
			if !cut || len(got) != maxShownArgs || !strings.HasPrefix(got, "{\n  \"s\": \"aaa") {
				t.Errorf("%d bytes: cut %v to %d bytes; want the first %d", len(tt.in), cut, len(got), maxShownArgs)
			}
			continue
		}
		if got != tt.want || cut {
			t.Errorf("shownArgs(%q) = %q, %v; want %q", tt.in, got, cut, tt.want)
		}
	}
}

// TestApprovalRemember: "allow for 10 minutes" runs the same call again
// without a prompt; another call is asked about.
func TestApprovalRemember(t *testing.T) {
	f := askFixture(t, time.Minute)
	c, csrf := f.visit(t)
	s := f.stream(t, c)
	res := f.agentCall(`{"text": "again"}`)
	p := promptOf(t, s.until(t, "approval", func(json.RawMessage) bool { return true }))
	if st, body := f.answer(t, c, csrf, "default", p.ID, "remember"); st != http.StatusOK {
		t.Fatalf("remember answered %d %s", st, body)
	}
	if r := <-res; r.IsError {
		t.Fatalf("the allowed call: %q", text(r))
	}
	if r := <-f.agentCall(`{"text": "again"}`); r.IsError {
		t.Errorf("the same call again: %q", text(r))
	}
	res = f.agentCall(`{"text": "other"}`)
	if p2 := promptOf(t, s.until(t, "approval", func(json.RawMessage) bool { return true })); !strings.Contains(p2.Arguments, "other") {
		t.Errorf("another call's prompt shows %s", p2.Arguments)
	} else {
		f.answer(t, c, csrf, "default", p2.ID, "deny")
	}
	<-res
	var by []string
	for _, c := range f.calls() {
		by = append(by, c.Decision.Outcome+" by "+c.Decision.By)
	}
	if got := strings.Join(by, ", "); got != "approved by dashboard, approved by dashboard (remembered), denied by dashboard" {
		t.Errorf("the call log: %s", got)
	}
}
