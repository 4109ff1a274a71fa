package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

func TestParsePolicy(t *testing.T) {
	p, err := session.ParsePolicy(" fs.write_* = ask, *.delete_*=deny ,sh=deny,*=allow")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "fs.write_*=ask,*.delete_*=deny,sh=deny,*=allow" {
		t.Errorf("String = %q", got)
	}
	for _, tc := range []struct{ id, tool, action, rule string }{
		{"fs", "write_file", "ask", "fs.write_*=ask"},
		{"gh", "delete_repo", "deny", "*.delete_*=deny"},
		{"sh", "bash", "deny", "sh=deny"},
		{"fs", "read_file", "allow", "*=allow"},
	} {
		if a, r := p.Decide(tc.id, tc.tool); a != tc.action || r != tc.rule {
			t.Errorf("Decide(%s.%s) = %s, %s; want %s, %s", tc.id, tc.tool, a, r, tc.action, tc.rule)
		}
	}
	if a, r := (session.Policy{}).Decide("fs", "x"); a != "allow" || r != "" {
		t.Errorf("the zero policy decides %s, %s", a, r)
	}
	for _, bad := range []string{"fs.write_*", "fs.*=maybe", "=ask", "[a=ask"} {
		if _, err := session.ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) took it", bad)
		}
	}
}

// policySession is overrideSession with a policy and a log of decisions.
func policySession(t *testing.T, policy string) (*session.Session, func() []*session.CallInfo) {
	t.Helper()
	var mu sync.Mutex
	var calls []*session.CallInfo
	s, _ := overrideSession(t, &session.Options{OnCall: func(_ context.Context, c *session.CallInfo) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	}})
	if err := s.SetSettings(session.Settings{Policy: policy, AskTimeout: api.Duration(50e6)}); err != nil {
		t.Fatal(err)
	}
	return s, func() []*session.CallInfo {
		mu.Lock()
		defer mu.Unlock()
		return append([]*session.CallInfo(nil), calls...)
	}
}

func asAgent(ctx context.Context) context.Context {
	return node.WithCaller(ctx, node.Caller{Kind: node.CallerMCP, Name: "agent"})
}

func TestPolicyDenyAndAllow(t *testing.T) {
	s, calls := policySession(t, "fs.write_*=deny")
	args := json.RawMessage(`{"path":"/x","content":"c"}`)
	res, err := s.Call(asAgent(t.Context()), "fs", &node.CallRequest{Tool: "write_file", Arguments: args})
	if err != nil || !res.IsError || !strings.Contains(resText(res), "policy refuses calls to fs.write_file (rule fs.write_*=deny): it did not run") {
		t.Fatalf("an agent's denied call = %v, %v", resText(res), err)
	}
	// The person's own call runs; a call no rule names runs.
	for _, c := range []struct {
		ctx  context.Context
		tool string
	}{
		{node.WithCaller(t.Context(), node.Caller{Kind: node.CallerREPL}), "write_file"},
		{asAgent(t.Context()), "read_file"},
	} {
		if res, err := s.Call(c.ctx, "fs", &node.CallRequest{Tool: c.tool, Arguments: args}); err != nil || res.IsError {
			t.Errorf("call of %s = %v, %v; want it run", c.tool, resText(res), err)
		}
	}
	got := calls()
	if len(got) != 3 {
		t.Fatalf("%d calls logged", len(got))
	}
	if d := got[0].Decision; d == nil || d.Outcome != api.OutcomeDenied || d.Rule != "fs.write_*=deny" {
		t.Errorf("denied call's decision = %+v", d)
	}
	if d := got[1].Decision; d != nil {
		t.Errorf("the person's call has a decision: %+v", d)
	}
	if d := got[2].Decision; d == nil || d.Outcome != api.OutcomeAllowed || d.Rule != "" {
		t.Errorf("an unnamed call's decision = %+v; want allowed by default", d)
	}
}

func TestPolicyAsk(t *testing.T) {
	s, calls := policySession(t, "fs.write_file=ask")
	args := json.RawMessage(`{"path":"/x","content":"c"}`)
	call := func(ctx context.Context) (*mcp.CallToolResult, error) {
		return s.Call(ctx, "fs", &node.CallRequest{Tool: "write_file", Arguments: args})
	}
	var asked []*session.ApprovalRequest
	answer := func(a session.Approval, err error) session.Approver {
		return func(ctx context.Context, req *session.ApprovalRequest) (session.Approval, error) {
			asked = append(asked, req)
			return a, err
		}
	}

	// Nobody to ask.
	res, err := call(asAgent(t.Context()))
	if err != nil || !res.IsError || !strings.Contains(resText(res), "nobody could be asked") {
		t.Fatalf("with nobody to ask: %q, %v", resText(res), err)
	}
	// The caller's client declines.
	res, _ = call(session.WithApprover(asAgent(t.Context()), answer(session.Approval{By: "mcp:agent", Reason: "declined"}, nil)))
	if !res.IsError || !strings.Contains(resText(res), "refused it: declined") {
		t.Errorf("declined: %q", resText(res))
	}
	// The caller's client cannot be asked: the session's approver is.
	s.SetApprover(answer(session.Approval{Allow: true, By: "repl"}, nil))
	res, _ = call(session.WithApprover(asAgent(t.Context()), answer(session.Approval{}, errors.New("no form support"))))
	if res.IsError {
		t.Errorf("approved at the Commander: %q", resText(res))
	}
	if req := asked[len(asked)-1]; req.Node != "fs" || req.Tool != "write_file" || string(req.Arguments) != string(args) || req.Rule != "fs.write_file=ask" || req.Caller.Name != "agent" {
		t.Errorf("asked %+v", req)
	}
	// Remembered: the same call runs without asking; another does not.
	n := len(asked)
	s.SetApprover(answer(session.Approval{Allow: true, By: "repl", Remember: true}, nil))
	for range 2 {
		if res, _ := call(asAgent(t.Context())); res.IsError {
			t.Errorf("remembered approval: %q", resText(res))
		}
	}
	if len(asked) != n+1 {
		t.Errorf("asked %d times for two same calls; want once", len(asked)-n)
	}
	// Nobody answers in time.
	s.SetApprover(func(ctx context.Context, _ *session.ApprovalRequest) (session.Approval, error) {
		<-ctx.Done()
		return session.Approval{}, ctx.Err()
	})
	res, _ = s.Call(asAgent(t.Context()), "fs", &node.CallRequest{Tool: "write_file", Arguments: json.RawMessage(`{"path":"/y","content":"c"}`)})
	if !res.IsError || !strings.Contains(resText(res), "nobody approved this call to fs.write_file within 50ms") {
		t.Errorf("timed out: %q", resText(res))
	}

	var outcomes []string
	for _, c := range calls() {
		o := c.Decision.Outcome
		if c.Decision.By != "" {
			o += " by " + c.Decision.By
		}
		outcomes = append(outcomes, o)
	}
	if want := "no_one,denied by mcp:agent,approved by repl,approved by repl,approved by repl (remembered),timed_out"; strings.Join(outcomes, ",") != want {
		t.Errorf("decisions logged: %s\nwant %s", strings.Join(outcomes, ","), want)
	}
}

// TestPolicyMatchesEitherName: a rule names a renamed tool by its new
// name or its own; the person is shown the arguments the tool would get.
func TestPolicyMatchesEitherName(t *testing.T) {
	s, _ := policySession(t, "fs.write_file=deny")
	if _, err := s.SetOverride(t.Context(), "fs", "write_file", api.ToolOverride{Name: "save"}, false); err != nil {
		t.Fatal(err)
	}
	res, _ := s.Call(asAgent(t.Context()), "fs", &node.CallRequest{Tool: "save", Arguments: json.RawMessage(`{"path":"/x","content":"c"}`)})
	if !res.IsError {
		t.Errorf("a renamed tool escaped the rule on its own name: %q", resText(res))
	}
	if err := s.SetSettings(session.Settings{Policy: "fs.save=ask"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetOverride(t.Context(), "fs", "save", api.ToolOverride{Fixed: map[string]json.RawMessage{"path": json.RawMessage(`"/srv/a"`)}}, true); err != nil {
		t.Fatal(err)
	}
	var got *session.ApprovalRequest
	ctx := session.WithApprover(asAgent(t.Context()), func(_ context.Context, req *session.ApprovalRequest) (session.Approval, error) {
		got = req
		return session.Approval{Allow: true, By: "t"}, nil
	})
	if res, _ := s.Call(ctx, "fs", &node.CallRequest{Tool: "save", Arguments: json.RawMessage(`{"content":"c"}`)}); res.IsError {
		t.Fatalf("approved call: %q", resText(res))
	}
	if got == nil || got.Tool != "save" || !strings.Contains(string(got.Arguments), `"path":"/srv/a"`) {
		t.Errorf("asked about %+v; want save with the fixed path", got)
	}
	el := got.Elicitation()
	if !strings.Contains(el.Message, "mcp:agent wants to call fs.save") || !strings.Contains(el.Message, `"/srv/a"`) || el.Meta[api.MetaApproval] == nil {
		t.Errorf("elicitation = %+v", el)
	}
}

func resText(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
