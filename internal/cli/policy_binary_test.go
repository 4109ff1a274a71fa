//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
)

// TestBinaryPolicyAsksMCPClient: with a call policy set, a call an MCP
// client of `nerve mcp serve` makes (the Go SDK's client over the real
// binary's stdio) is asked of that client's person as an elicitation that
// shows the exact arguments, and runs only when approved; a denied, a
// declined, an unanswered call and one nobody could be asked about are
// isError results that say so; the person's own `nerve call` runs; every
// decision is in the call log.
func TestBinaryPolicyAsksMCPClient(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "ev", "--", server)
	if _, errOut, code := n.Run("session", "set", "policy", "ev.echo=maybe"); code != 2 || !strings.Contains(errOut, "the action is allow, ask or deny") {
		t.Errorf("a bad policy: exit %d, %q", code, errOut)
	}
	n.Must("session", "set", "policy", "ev.fail=deny,ev.echo=ask")
	n.Must("session", "set", "ask-timeout", "1s")
	if out := n.Must("session", "show"); !strings.Contains(out, "policy  ev.fail=deny,ev.echo=ask") || !strings.Contains(out, "ask-timeout  1s") {
		t.Errorf("session show = %q", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	answer := "accept"
	c := mcp.NewClient(&mcp.Implementation{Name: "person"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			a := answer
			mu.Unlock()
			switch a {
			case "wait":
				// The person answers after the ask-timeout. In 2025-11-25
				// the daemon withdraws the question first (ctx ends); in
				// 2026-07-28 there is no request to withdraw (the call's
				// answer was input_required) and the late answer comes
				// back in the retry, too late either way.
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(3 * time.Second):
					return &mcp.ElicitResult{Action: "accept"}, nil
				}
			case "remember":
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"remember": true}}, nil
			}
			return &mcp.ElicitResult{Action: a}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(s *mcp.ClientSession, tool, text string) (string, bool) {
		t.Helper()
		key := "text"
		if tool == "ev.fail" {
			key = "message"
		}
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{key: text}})
		if err != nil {
			t.Fatalf("call %s: %v", tool, err)
		}
		return resultText(res), res.IsError
	}
	setAnswer := func(a string) {
		mu.Lock()
		answer = a
		mu.Unlock()
	}

	// Approved: the tool runs, and the person saw what would run.
	if got, isErr := call(cs, "ev.echo", "ship it"); isErr || got != "ship it" {
		t.Errorf("approved call = %q (isError %v)", got, isErr)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0].Message, "mcp:person wants to call ev.echo") ||
		!strings.Contains(asked[0].Message, `"text": "ship it"`) || asked[0].Meta[api.MetaApproval] == nil {
		t.Errorf("the client was asked %+v", asked)
	}
	mu.Unlock()
	// Declined.
	setAnswer("decline")
	if got, isErr := call(cs, "ev.echo", "no"); !isErr || !strings.Contains(got, "refused it: declined. It did not run.") {
		t.Errorf("declined call = %q (isError %v)", got, isErr)
	}
	// Approved with remember: the same call again is not asked.
	setAnswer("remember")
	call(cs, "ev.echo", "again")
	setAnswer("decline")
	if got, isErr := call(cs, "ev.echo", "again"); isErr || got != "again" {
		t.Errorf("remembered call = %q (isError %v)", got, isErr)
	}
	// Unanswered.
	setAnswer("wait")
	if got, isErr := call(cs, "ev.echo", "late"); !isErr || !strings.Contains(got, "nobody approved this call to ev.echo within 1s") {
		t.Errorf("unanswered call = %q (isError %v)", got, isErr)
	}
	// Denied by rule, without asking.
	mu.Lock()
	before := len(asked)
	mu.Unlock()
	if got, isErr := call(cs, "ev.fail", "x"); !isErr || !strings.Contains(got, "policy refuses calls to ev.fail (rule ev.fail=deny)") {
		t.Errorf("denied call = %q (isError %v)", got, isErr)
	}
	mu.Lock()
	if len(asked) != before {
		t.Errorf("a denied call was asked about")
	}
	mu.Unlock()

	// An llm node's tool call on behalf of this client's call is asked of
	// this client, named as the llm's.
	setAnswer("accept")
	llm := llmserver.Start(
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "ev__echo", Arguments: `{"text":"via the agent"}`}}},
		llmserver.Turn{Text: "done"},
	)
	defer llm.Close()
	n.Must("node", "add", "llm", "ag", "--base-url", llm.URL, "--model", "m", "--tools", "ev")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ag.chat", Arguments: map[string]any{"message": "echo something"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "done") {
		t.Errorf("ag.chat = %q, %v", resultText(res), err)
	}
	mu.Lock()
	if last := asked[len(asked)-1].Message; !strings.Contains(last, "llm:ag wants to call ev.echo") || !strings.Contains(last, `"via the agent"`) {
		t.Errorf("the client was asked %q; want the llm's call", last)
	}
	mu.Unlock()

	// A script's calls (code mode, run_script) are asked of the client
	// that runs it.
	cc, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve", "--code"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = cc.CallTool(ctx, &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": `result = ev.echo(text="from a script")`}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "from a script") {
		t.Errorf("run_script = %q, %v", resultText(res), err)
	}
	mu.Lock()
	if last := asked[len(asked)-1].Message; !strings.Contains(last, "script:") || !strings.Contains(last, "wants to call ev.echo") {
		t.Errorf("the client was asked %q; want the script's call", last)
	}
	mu.Unlock()
	cc.Close()

	// A client that cannot show a form, and no Commander: nobody to ask.
	ms, err := mcp.NewClient(&mcp.Implementation{Name: "script"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if got, isErr := call(ms, "ev.echo", "x"); !isErr || !strings.Contains(got, "nobody could be asked") {
		t.Errorf("call with nobody to ask = %q (isError %v)", got, isErr)
	}
	// The person's own call runs.
	if out := n.Must("call", "@ev", "echo", "text=mine"); strings.TrimSpace(out) != "mine" {
		t.Errorf("nerve call = %q", out)
	}

	out := n.Must("--json", "log", "-n", "0")
	var outcomes []string
	for line := range strings.Lines(out) {
		var r daemon.CallRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		o := "-"
		if r.Policy != nil {
			o = r.Policy.Outcome
			if r.Policy.By != "" {
				o += " by " + r.Policy.By
			}
		}
		outcomes = append(outcomes, r.Tool+" "+o)
	}
	want := []string{
		"echo approved by mcp:person", "echo denied by mcp:person", "echo approved by mcp:person",
		"echo approved by mcp:person (remembered)", "echo timed_out", "fail denied",
		"echo approved by mcp:person", "chat allowed", "echo approved by mcp:person", "echo no_one", "echo -",
	}
	if strings.Join(outcomes, "\n") != strings.Join(want, "\n") {
		t.Errorf("the call log's decisions:\n%s\nwant\n%s", strings.Join(outcomes, "\n"), strings.Join(want, "\n"))
	}
	if text := n.Must("log", "-n", "2"); !strings.Contains(text, "policy no_one (ev.echo=ask)") {
		t.Errorf("nerve log shows:\n%s", text)
	}
}
