package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

func ptr[T any](v T) *T { return &v }

func TestToolLoop(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := llmserver.Start(
				llmserver.Turn{
					Check: func(r *llmserver.Request) error {
						if r.Stream != stream {
							return fmt.Errorf("stream = %v", r.Stream)
						}
						if r.Messages[0].Role != "system" || r.Messages[0].Text() != "Be brief." {
							return fmt.Errorf("first message %+v, want the system prompt", r.Messages[0])
						}
						if got := r.ToolNames(); !slices.Equal(got, []string{"echo__identity"}) {
							return fmt.Errorf("tools offered %v, want [echo__identity] (never agent__chat)", got)
						}
						return nil
					},
					Text:      "Let me echo that.",
					ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"hello from the model"}`}},
				},
				llmserver.Turn{
					Check: func(r *llmserver.Request) error {
						got, ok := r.ToolResult("call_1_0")
						if !ok || got != "hello from the model" {
							return fmt.Errorf("tool result fed back = %q, %v", got, ok)
						}
						return nil
					},
					Text: "The echo said: hello from the model.",
				},
			)
			h := newHarness(t, srv, llm.Options{Tools: []string{"*"}, System: "Be brief.", Stream: ptr(stream)})
			rec := &recorder{}
			res, err := h.chat(context.Background(), "echo something", rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "The echo said: hello from the model." || res.IsError {
				t.Errorf("result = %q (isError %v)", got, res.IsError)
			}
			if got, want := rec.text(), "Let me echo that.The echo said: hello from the model."; got != want {
				t.Errorf("streamed text = %q, want %q", got, want)
			}
			want := []string{"usage", "tool_call", "tool_result", "usage"}
			if got := rec.steps(); !slices.Equal(got, want) {
				t.Errorf("steps = %v, want %v", got, want)
			}
			call := rec.stepData("tool_call")[0]
			if call["tool"] != "echo.identity" || call["name"] != "echo__identity" {
				t.Errorf("tool_call step = %v", call)
			}
			if u := rec.stepData("usage")[0]; u["total_tokens"] == nil || u["total_tokens"].(float64) <= 0 {
				t.Errorf("usage step = %v, want token counts", u)
			}
			// The conversation: user, assistant(tool call), tool, assistant.
			msgs := h.agent().Messages()
			var roles []string
			for _, m := range msgs {
				roles = append(roles, m.Role)
			}
			if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant"}) {
				t.Errorf("conversation roles = %v", roles)
			}
		})
	}
}

func TestParallelToolCalls(t *testing.T) {
	// The tool returns only once both calls are in flight: run one after
	// the other, the chat would wait until the test's deadline.
	var inFlight atomic.Int32
	both := make(chan struct{})
	box := boxSpec{
		id:    "slow",
		tools: []*mcp.Tool{{Name: "wait", InputSchema: objectSchema(map[string]any{"n": map[string]any{"type": "integer"}})}},
		call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			if inFlight.Add(1) == 2 {
				close(both)
			}
			select {
			case <-both:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return textResult("done " + string(args)), nil
		},
	}
	srv := llmserver.Start(
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{
			{Name: "slow__wait", Arguments: `{"n":1}`},
			{Name: "slow__wait", Arguments: `{"n":2}`},
		}},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				// Results come back in the order of the calls.
				n := len(r.Messages)
				if r.Messages[n-2].ToolCallID != "call_1_0" || r.Messages[n-1].ToolCallID != "call_1_1" {
					return fmt.Errorf("tool results out of order: %+v", r.Messages[n-2:])
				}
				if a, b := r.Messages[n-2].Text(), r.Messages[n-1].Text(); a != `done {"n":1}` || b != `done {"n":2}` {
					return fmt.Errorf("tool results %q, %q", a, b)
				}
				return nil
			},
			Text: "both done",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"slow"}}, box)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.chat(ctx, "run both", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "both done" {
		t.Errorf("result %q", got)
	}
}

func TestToolErrorsFedBack(t *testing.T) {
	box := boxSpec{
		id: "box",
		tools: []*mcp.Tool{
			{Name: "fail", InputSchema: objectSchema(nil)},
			{Name: "typed", InputSchema: objectSchema(map[string]any{"n": map[string]any{"type": "integer"}}, "n")},
		},
		call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
				&mcp.TextContent{Text: "disk full"},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
			}}, nil
		},
	}
	tests := []struct {
		name, tool, args string
		want             string
	}{
		{"isError result, every block described", "box__fail", `{}`, "Error: disk full\n[image/png 2 KB]"},
		{"arguments the schema refuses", "box__typed", `{"n":"x"}`, "Error: @box typed:"},
		{"arguments that are not JSON", "box__typed", `{"n":`, "Error: the arguments of box__typed are not valid JSON"},
		{"a tool that does not exist", "box__nope", `{}`, `Error: there is no tool "box__nope"; the tools are: box__fail, box__typed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmserver.Start(
				llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: tt.tool, Arguments: tt.args}}},
				llmserver.Turn{
					Check: func(r *llmserver.Request) error {
						got, _ := r.ToolResult("call_1_0")
						if !strings.HasPrefix(got, tt.want) {
							return fmt.Errorf("tool result fed back = %q, want prefix %q", got, tt.want)
						}
						return nil
					},
					Text: "I see the error.",
				},
			)
			h := newHarness(t, srv, llm.Options{Tools: []string{"box"}}, box)
			rec := &recorder{}
			res, err := h.chat(context.Background(), "try it", rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "I see the error." {
				t.Errorf("result %q", got)
			}
			if r := rec.stepData("tool_result"); len(r) != 1 || r[0]["is_error"] != true {
				t.Errorf("tool_result steps = %v, want one with is_error", r)
			}
		})
	}
}

func TestMaxSteps(t *testing.T) {
	call := llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"again"}`}}}
	srv := llmserver.Start(call, call, call)
	h := newHarness(t, srv, llm.Options{Tools: []string{"echo"}, MaxSteps: 2})
	res, err := h.chat(context.Background(), "loop forever", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !res.IsError || !strings.Contains(got, "stopped after 2 steps") || !strings.Contains(got, "--max-steps") {
		t.Errorf("result = %q (isError %v), want a max-steps stop", got, res.IsError)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
	// Every tool call has its result, so the next chat is a valid request.
	msgs := h.agent().Messages()
	if last := msgs[len(msgs)-1]; last.Role != "tool" {
		t.Errorf("conversation ends with %q, want the last tool result", last.Role)
	}
}

func TestInterruptStopsAfterTheStep(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := llmserver.Start(
		llmserver.Turn{Arrived: arrived, Hold: release, ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"x"}`}}},
		llmserver.Turn{Text: "never sent"},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"echo"}})
	type out struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan out, 1)
	rec := &recorder{}
	go func() {
		res, err := h.chat(context.Background(), "go", rec)
		done <- out{res, err}
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the model request never arrived")
	}
	if err := h.s.Interrupt(context.Background(), "agent"); err != nil {
		t.Fatal(err)
	}
	close(release)
	var o out
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the chat did not stop after the interrupt")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if got := resultText(t, o.res); !strings.Contains(got, "interrupted after step 1") {
		t.Errorf("result = %q", got)
	}
	if srv.Remaining() != 1 {
		t.Errorf("the model got a second request after the interrupt")
	}
	// The step finished cleanly: the tool ran and its result is kept.
	if got := rec.steps(); !slices.Equal(got, []string{"usage", "tool_call", "tool_result"}) {
		t.Errorf("steps = %v", got)
	}
	if st := h.agent().State(); st != node.Ready {
		t.Errorf("agent is %s after the interrupt, want READY", st)
	}
	// The next chat continues from there.
	srv.Add() // turn 2 is still scripted
	res, err := h.chat(context.Background(), "continue", nil)
	if err != nil || resultText(t, res) != "never sent" {
		t.Fatalf("chat after interrupt: %v, %+v", err, res)
	}
}

func TestRetryOn429(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Status: 429, RetryAfter: "0", Error: "Rate limit reached for requests"},
		llmserver.Turn{Status: 503, RetryAfter: "0", Error: "overloaded"},
		llmserver.Turn{Text: "finally"},
	)
	h := newHarness(t, srv, llm.Options{})
	rec := &recorder{}
	res, err := h.chat(context.Background(), "hi", rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "finally" {
		t.Errorf("result %q", got)
	}
	if u := rec.stepData("usage"); len(u) != 1 || u[0]["attempts"] != 3.0 {
		t.Errorf("usage = %v, want attempts 3", u)
	}
}

// TestRetrySetting: the node's retry option bounds the tries.
func TestRetrySetting(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Status: 503, RetryAfter: "0", Error: "overloaded"},
		llmserver.Turn{Status: 503, RetryAfter: "0", Error: "overloaded"},
		llmserver.Turn{Text: "too late"},
	)
	h := newHarness(t, srv, llm.Options{Retry: &mcpconf.Retry{Attempts: 2}})
	_, err := h.chat(context.Background(), "hi", nil)
	if err == nil || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("chat = %v; want it to give up after 2 attempts", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestProviderErrorsAreClear(t *testing.T) {
	tests := []struct {
		name string
		turn llmserver.Turn
		want []string
	}{
		{"401", llmserver.Turn{Status: 401, Error: "Incorrect API key provided: sk-abc***"}, []string{"refused the API key (401 Unauthorized)", "Incorrect API key provided", "--api-key"}},
		{"404", llmserver.Turn{Status: 404, Error: "The model `gpt-9` does not exist"}, []string{"404 Not Found", "does not exist", "--base-url", "--model"}},
		{"400", llmserver.Turn{Status: 400, Error: "Invalid schema for function"}, []string{"rejected the request (400 Bad Request): Invalid schema for function"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmserver.Start(tt.turn, llmserver.Turn{Text: "ok"})
			h := newHarness(t, srv, llm.Options{})
			_, err := h.chat(context.Background(), "hi", nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if srv.Remaining() != 1 {
				t.Errorf("a %s was retried", tt.name)
			}
			// The failed message is not left in the conversation.
			if n := len(h.agent().Messages()); n != 0 {
				t.Errorf("conversation has %d messages after a failed first step", n)
			}
		})
	}
}

func TestAPIKeyFromEnvironment(t *testing.T) {
	const secret = "sk-test-secret-1234"
	t.Setenv("NERVE_TEST_LLM_KEY", secret)
	srv := llmserver.Start(llmserver.Turn{Text: "authorised"})
	srv.RequireKey(secret)
	h := newHarness(t, srv, llm.Options{APIKey: "${NERVE_TEST_LLM_KEY}", Headers: map[string]string{"X-Title": "nerve ${NERVE_TEST_LLM_KEY:-x}"}})
	res, err := h.chat(context.Background(), "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resultText(t, res) != "authorised" {
		t.Fatal(resultText(t, res))
	}
	if got := srv.Requests()[0].Header.Get("X-Title"); got != "nerve "+secret {
		t.Errorf("header X-Title = %q", got)
	}
	// Saved unexpanded, never shown.
	spec, _ := h.s.Spec("agent")
	info, _ := json.Marshal(h.agent().Info())
	for what, b := range map[string][]byte{"spec": spec.Options, "info": info} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the %s holds the expanded key: %s", what, b)
		}
	}
	if !strings.Contains(string(spec.Options), "${NERVE_TEST_LLM_KEY}") {
		t.Errorf("spec options lost the reference: %s", spec.Options)
	}

	// A wrong key: the provider's message comes through.
	t.Setenv("NERVE_TEST_LLM_KEY", "sk-wrong")
	if err := h.s.Restart(context.Background(), "agent"); err != nil {
		t.Fatal(err)
	}
	_, err = h.chat(context.Background(), "hi", nil)
	if err == nil || !strings.Contains(err.Error(), "Incorrect API key provided") || strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("wrong key: %v", err)
	}
}

func TestAPIKeyVariableUnset(t *testing.T) {
	srv := llmserver.Start()
	s := session.New("test", registry(), nil)
	defer s.Close(context.Background())
	defer srv.Close()
	raw, _ := json.Marshal(llm.Options{BaseURL: srv.URL, Model: "m", APIKey: "${NERVE_TEST_UNSET_KEY}"})
	n, err := s.Add(context.Background(), node.Spec{ID: "agent", Kind: llm.Kind, Options: raw})
	if err == nil || !strings.Contains(err.Error(), "${NERVE_TEST_UNSET_KEY} is not set") || !strings.Contains(err.Error(), "--api-key") {
		t.Fatalf("Add = %v, want an error naming the variable", err)
	}
	if n.State() != node.Error {
		t.Errorf("state %s, want ERROR", n.State())
	}
}

func TestBadOptions(t *testing.T) {
	tests := []struct {
		opts string
		want string
	}{
		{`{"model":"m"}`, "--base-url is required"},
		{`{"base_url":"localhost:8080","model":"m"}`, "is not an http(s) URL"},
		{`{"base_url":"http://h/v1"}`, "--model is required"},
		{`{"base_url":"http://h/v1","model":"m","provider":"gemini"}`, `--provider "gemini" is not supported`},
		{`{"base_url":"http://h/v1","model":"m","tools":["a["]}`, `--tools entry "a[" is not a valid glob`},
		{`{"base_url":"http://h/v1","model":"m","max_step":3}`, `unknown field "max_step"`},
	}
	for _, tt := range tests {
		_, err := llm.New(node.Spec{ID: "a", Kind: llm.Kind, Options: json.RawMessage(tt.opts)}, node.Env{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%s) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

func TestResumeAfterRestart(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Text: "Nice to meet you, Ada."},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				var texts []string
				for _, m := range r.Messages {
					texts = append(texts, m.Role+":"+m.Text())
				}
				want := []string{"user:my name is Ada", "assistant:Nice to meet you, Ada.", "user:what is my name?"}
				if !slices.Equal(texts, want) {
					return fmt.Errorf("messages %q, want %q", texts, want)
				}
				return nil
			},
			Text: "Ada.",
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				if len(r.Messages) != 1 {
					return fmt.Errorf("after reset the model got %d messages, want 1", len(r.Messages))
				}
				return nil
			},
			Text: "I don't know.",
		},
	)
	h := newHarness(t, srv, llm.Options{})
	if _, err := h.chat(context.Background(), "my name is Ada", nil); err != nil {
		t.Fatal(err)
	}
	// The daemon restarts: a new session is restored from the saved specs.
	saved := h.specs()
	if err := h.s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h2 := &harness{t: t, srv: srv}
	h2.s = session.New("test", registry(), &session.Options{Save: func(specs []node.Spec) error {
		h2.mu.Lock()
		h2.save = specs
		h2.mu.Unlock()
		return nil
	}})
	defer h2.s.Close(context.Background())
	if err := h2.s.Restore(context.Background(), saved); err != nil {
		t.Fatal(err)
	}
	res, err := h2.chat(context.Background(), "what is my name?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if resultText(t, res) != "Ada." {
		t.Errorf("result %q", resultText(t, res))
	}
	// :node reset clears it, in memory and in the saved spec.
	if err := h2.agent().Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, sp := range h2.specs() {
		if sp.ID == "agent" && len(sp.State) != 0 {
			t.Errorf("saved state after reset: %s", sp.State)
		}
	}
	if _, err := h2.chat(context.Background(), "who am I?", nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestLongAndDottedToolNames(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 4) // 80 characters
	box := boxSpec{
		id: "srv",
		tools: []*mcp.Tool{
			{Name: "files.read.v2", InputSchema: objectSchema(nil)},
			{Name: long, InputSchema: objectSchema(nil)},
		},
		call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			return textResult("ran " + tool), nil
		},
	}
	dotted, longName := node.LLMName("srv", "files.read.v2"), node.LLMName("srv", long)
	srv := llmserver.Start(
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				for _, n := range r.ToolNames() {
					if !node.ValidLLMName(n) {
						return fmt.Errorf("tool name %q is not acceptable to providers", n)
					}
				}
				if got := r.ToolNames(); !slices.Equal(got, []string{dotted, longName}) {
					return fmt.Errorf("tool names %q", got)
				}
				return nil
			},
			ToolCalls: []llmserver.ToolCall{{Name: dotted}, {Name: longName}},
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				a, _ := r.ToolResult("call_1_0")
				b, _ := r.ToolResult("call_1_1")
				if a != "ran files.read.v2" || b != "ran "+long {
					return fmt.Errorf("results %q, %q", a, b)
				}
				return nil
			},
			Text: "ok",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"srv.*"}}, box)
	rec := &recorder{}
	if _, err := h.chat(context.Background(), "call them", rec); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if len(longName) > 64 || dotted != "srv__files_read_v2" {
		t.Errorf("names %q (%d), %q", longName, len(longName), dotted)
	}
	var tools []any
	for _, c := range rec.stepData("tool_call") {
		tools = append(tools, c["tool"])
	}
	if !slices.Contains(tools, any("srv.files.read.v2")) || !slices.Contains(tools, any("srv."+long)) {
		t.Errorf("tool_call steps name %v, want the qualified names", tools)
	}
}

func TestToolSelection(t *testing.T) {
	box := boxSpec{
		id: "fs",
		tools: []*mcp.Tool{
			{Name: "read_file", InputSchema: objectSchema(nil)},
			{Name: "write_file", InputSchema: objectSchema(nil)},
		},
	}
	tests := []struct {
		tools []string
		want  []string
	}{
		{nil, nil},
		{[]string{"*"}, []string{"echo__identity", "fs__read_file", "fs__write_file"}},
		{[]string{"fs"}, []string{"fs__read_file", "fs__write_file"}},
		{[]string{"fs.read_*", "echo"}, []string{"echo__identity", "fs__read_file"}},
		{[]string{"e*"}, []string{"echo__identity"}},
		{[]string{"nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.tools, ","), func(t *testing.T) {
			srv := llmserver.Start(llmserver.Turn{Text: "ok"})
			h := newHarness(t, srv, llm.Options{Tools: tt.tools}, box)
			if _, err := h.chat(context.Background(), "hi", nil); err != nil {
				t.Fatal(err)
			}
			if got := srv.Requests()[0].ToolNames(); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("tools %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToolsSeenWhenANodeIsAddedLater(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Text: "one"},
		llmserver.Turn{Text: "two"},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"*"}})
	if _, err := h.chat(context.Background(), "hi", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Add(context.Background(), node.Spec{ID: "echo2", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.chat(context.Background(), "again", nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if a, b := reqs[0].ToolNames(), reqs[1].ToolNames(); len(a) != 1 || !slices.Equal(b, []string{"echo__identity", "echo2__identity"}) {
		t.Errorf("tools before %v, after adding echo2 %v", a, b)
	}
}

func TestContextBudgetDropsOldToolResults(t *testing.T) {
	big := strings.Repeat("x", 2400) // ~600 tokens, under the per-result cap
	box := boxSpec{
		id:    "big",
		tools: []*mcp.Tool{{Name: "dump", InputSchema: objectSchema(nil)}},
		call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			return textResult(big), nil
		},
	}
	dump := llmserver.ToolCall{Name: "big__dump"}
	srv := llmserver.Start(
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{dump, dump, dump, dump}},
		llmserver.Turn{Text: "first done"},
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{dump}},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				var kept []string
				for _, id := range []string{"call_1_0", "call_1_1", "call_1_2", "call_1_3", "call_3_0"} {
					got, _ := r.ToolResult(id)
					switch {
					case got == big:
						kept = append(kept, id)
					case !strings.Contains(got, "removed to keep the conversation under its context budget of 3000 tokens"):
						return fmt.Errorf("tool result %s is %.80q", id, got)
					}
				}
				if want := []string{"call_1_1", "call_1_2", "call_1_3", "call_3_0"}; !slices.Equal(kept, want) {
					return fmt.Errorf("kept %v, want %v: the oldest goes first", kept, want)
				}
				return nil
			},
			Text: "second done",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"big"}, ContextTokens: 3000}, box)
	if _, err := h.chat(context.Background(), "first", nil); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if _, err := h.chat(context.Background(), "second", rec); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if c := rec.stepData("context"); len(c) != 1 || c[0]["dropped_tool_results"] != 1.0 {
		t.Errorf("context steps %v, want one dropping 1 tool result", c)
	}
}

func TestContextBudgetDropsOldExchanges(t *testing.T) {
	long := strings.Repeat("word ", 800) // ~1000 tokens a message
	srv := llmserver.Start(
		llmserver.Turn{Text: long},
		llmserver.Turn{Text: long},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				if !strings.Contains(r.Messages[0].Text(), "Earlier messages were removed") {
					return fmt.Errorf("no notice at the start: %.80q", r.Messages[0].Text())
				}
				if r.Last().Text() != "third" {
					return fmt.Errorf("the last message is %.40q", r.Last().Text())
				}
				return nil
			},
			Text: "ok",
		},
	)
	h := newHarness(t, srv, llm.Options{ContextTokens: 1500})
	for _, m := range []string{"first", "second", "third"} {
		if _, err := h.chat(context.Background(), m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestSample(t *testing.T) {
	srv := llmserver.Start(llmserver.Turn{
		Check: func(r *llmserver.Request) error {
			if len(r.Tools) != 0 || r.MaxTokens != 50 {
				return fmt.Errorf("tools %v, max_tokens %d", r.ToolNames(), r.MaxTokens)
			}
			if r.Messages[0].Role != "system" || r.Messages[0].Text() != "You are a poet." || r.Last().Text() != "a haiku, please" {
				return fmt.Errorf("messages %+v", r.Messages)
			}
			return nil
		},
		Text: "old pond / frog jumps",
	})
	h := newHarness(t, srv, llm.Options{Tools: []string{"*"}})
	res, err := h.agent().Sample(context.Background(), &mcp.CreateMessageParams{
		MaxTokens:    50,
		SystemPrompt: "You are a poet.",
		Messages:     []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "a haiku, please"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content.(*mcp.TextContent); !ok || tc.Text != "old pond / frog jumps" || res.Model != "test-model" || res.StopReason != "endTurn" {
		t.Errorf("result %+v", res)
	}
	if n := len(h.agent().Messages()); n != 0 {
		t.Errorf("sampling changed the conversation (%d messages)", n)
	}
}

func TestStopCancelsAChat(t *testing.T) {
	arrived := make(chan struct{})
	srv := llmserver.Start(llmserver.Turn{Arrived: arrived, Hold: make(chan struct{}), Text: "never"})
	h := newHarness(t, srv, llm.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := h.chat(context.Background(), "hi", nil)
		done <- err
	}()
	<-arrived
	if err := h.agent().Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Errorf("chat after stop: %v, want cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not end the chat")
	}
}
