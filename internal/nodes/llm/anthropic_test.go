package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/bash"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// The tests of this file run the llm node with --provider anthropic
// against the scripted Messages API server, which refuses what the API
// refuses (srv.Err reports it): every test checks the node sent valid
// requests.

func anthropicHarness(t testing.TB, srv *llmserver.AnthropicServer, opts llm.Options, boxes ...boxSpec) *harness {
	t.Helper()
	opts.Provider = llm.ProviderAnthropic
	return newHarnessAt(t, nil, srv.URL, srv.Close, opts, boxes...)
}

// anthropicShape lists "role:blocktype,blocktype" for each message of a request.
func anthropicShape(r *llmserver.AnthropicRequest) []string {
	var out []string
	for _, m := range r.Messages {
		var types []string
		for _, b := range m.Blocks() {
			types = append(types, b.Type)
		}
		out = append(out, m.Role+":"+strings.Join(types, ","))
	}
	return out
}

// TestAnthropicToolLoop: a real session with an identity and a bash node;
// the model calls bash, then identity with what bash printed, then
// answers.
func TestAnthropicToolLoop(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := llmserver.StartAnthropic(
				llmserver.AnthropicTurn{
					Check: func(r *llmserver.AnthropicRequest) error {
						if r.Stream != stream || r.SystemText() != "Be brief." || r.Model != "claude-test" {
							return fmt.Errorf("stream %v system %q model %q", r.Stream, r.SystemText(), r.Model)
						}
						if r.MaxTokens == nil || *r.MaxTokens != 4096 {
							return fmt.Errorf("max_tokens %v, want the default 4096", r.MaxTokens)
						}
						if r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") != "2023-06-01" {
							return fmt.Errorf("headers %v", r.Header)
						}
						if got := r.ToolNames(); !slices.Equal(got, []string{"echo__identity", "sh__bash"}) {
							return fmt.Errorf("tools %v", got)
						}
						sh, _ := r.Tool("sh__bash")
						if strings.Contains(string(r.Body), "exclusiveMinimum") || sh.InputSchema["properties"].(map[string]any)["command"] == nil {
							return fmt.Errorf("bash input_schema %v", sh.InputSchema)
						}
						return nil
					},
					Thinking:  "Compute it in the shell.",
					Text:      "Asking the shell.",
					ToolCalls: []llmserver.ToolCall{{Name: "sh__bash", Arguments: `{"command":"cd /tmp && echo $((6*7))"}`}},
					Chunks:    5,
				},
				llmserver.AnthropicTurn{
					Check: func(r *llmserver.AnthropicRequest) error {
						if got, want := anthropicShape(r), []string{"user:text", "assistant:text,tool_use", "user:tool_result"}; !slices.Equal(got, want) {
							return fmt.Errorf("messages %v, want %v", got, want)
						}
						use := r.Messages[1].Blocks()[1]
						var in map[string]string
						_ = json.Unmarshal(use.Input, &in)
						if use.ID != "toolu_1_0" || use.Name != "sh__bash" || in["command"] != "cd /tmp && echo $((6*7))" {
							return fmt.Errorf("tool_use sent back as %+v", use)
						}
						res, _ := r.ToolResult("toolu_1_0")
						if strings.TrimSpace(res.ContentText()) != "42" || res.IsError {
							return fmt.Errorf("bash result %q (is_error %v)", res.ContentText(), res.IsError)
						}
						return nil
					},
					ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"the answer is 42"}`}},
				},
				llmserver.AnthropicTurn{
					Check: func(r *llmserver.AnthropicRequest) error {
						res, _ := r.ToolResult("toolu_2_0")
						if res.ContentText() != "the answer is 42" {
							return fmt.Errorf("identity result %q", res.ContentText())
						}
						return nil
					},
					Text: "It is 42.",
				},
			)
			t.Setenv("NERVE_TEST_ANTHROPIC_KEY", "sk-ant-test")
			srv.RequireKey("sk-ant-test")
			reg := registry()
			reg.Register(bash.Kind, bash.New)
			s := session.New("anthropic", reg, &session.Options{Dir: t.TempDir()})
			defer s.Close(context.Background())
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			opts, _ := json.Marshal(llm.Options{
				Provider: llm.ProviderAnthropic, BaseURL: srv.URL, Model: "claude-test", APIKey: "${NERVE_TEST_ANTHROPIC_KEY}",
				Tools: []string{"*"}, System: "Be brief.", Stream: ptr(stream),
			})
			for _, sp := range []node.Spec{{ID: "echo", Kind: identity.Kind}, {ID: "sh", Kind: bash.Kind}, {ID: "agent", Kind: llm.Kind, Options: opts}} {
				if _, err := s.Add(ctx, sp); err != nil {
					t.Fatalf("adding %s: %v", sp.ID, err)
				}
			}
			rec := &recorder{}
			args, _ := json.Marshal(map[string]string{"message": "what is 6*7?"})
			res, err := s.Call(ctx, "agent", &node.CallRequest{Tool: llm.ToolName, Arguments: args, Observe: rec.observe})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "It is 42." || res.IsError {
				t.Errorf("result %q (isError %v)", got, res.IsError)
			}
			if got, want := rec.text(), "Asking the shell.It is 42."; got != want {
				t.Errorf("streamed text %q, want %q", got, want)
			}
			want := []string{"thinking", "usage", "tool_call", "tool_result", "usage", "tool_call", "tool_result", "usage"}
			// Thinking streams in several deltas; count it once.
			got := slices.Compact(rec.steps())
			if !slices.Equal(got, want) {
				t.Errorf("steps %v, want %v", got, want)
			}
			if u := rec.stepData("usage")[0]; u["finish_reason"] != "tool_use" || u["prompt_tokens"].(float64) <= 0 {
				t.Errorf("usage step %v", u)
			}
			n, _ := s.Node("agent")
			var roles []string
			for _, m := range n.(*llm.Node).Messages() {
				roles = append(roles, m.Role)
			}
			if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant", "tool", "assistant"}) {
				t.Errorf("conversation %v", roles)
			}
		})
	}
}

func TestAnthropicParallelToolUse(t *testing.T) {
	// Each call returns only once both are in flight.
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
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{ToolCalls: []llmserver.ToolCall{
			{Name: "slow__wait", Arguments: `{"n":1}`},
			{Name: "slow__wait", Arguments: `{"n":2}`},
		}},
		llmserver.AnthropicTurn{
			Check: func(r *llmserver.AnthropicRequest) error {
				// Both results in one user message, in the order of the calls.
				if got, want := anthropicShape(r), []string{"user:text", "assistant:tool_use,tool_use", "user:tool_result,tool_result"}; !slices.Equal(got, want) {
					return fmt.Errorf("messages %v, want %v", got, want)
				}
				bs := r.Last().Blocks()
				if bs[0].ToolUseID != "toolu_1_0" || bs[0].ContentText() != `done {"n":1}` || bs[1].ToolUseID != "toolu_1_1" || bs[1].ContentText() != `done {"n":2}` {
					return fmt.Errorf("tool results %+v", bs)
				}
				return nil
			},
			Text: "both done",
		},
	)
	h := anthropicHarness(t, srv, llm.Options{Tools: []string{"slow"}}, box)
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

func TestAnthropicToolErrorIsError(t *testing.T) {
	box := boxSpec{
		id:    "box",
		tools: []*mcp.Tool{{Name: "fail", InputSchema: objectSchema(nil)}, {Name: "ok", InputSchema: objectSchema(nil)}},
		call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			if tool == "ok" {
				return textResult("fine"), nil
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil
		},
	}
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{ToolCalls: []llmserver.ToolCall{{Name: "box__fail"}, {Name: "box__ok"}, {Name: "box__nope"}}},
		llmserver.AnthropicTurn{
			Check: func(r *llmserver.AnthropicRequest) error {
				for _, want := range []struct {
					id, text string
					isError  bool
				}{
					{"toolu_1_0", "Error: disk full", true},
					{"toolu_1_1", "fine", false},
					{"toolu_1_2", `Error: there is no tool "box__nope"`, true},
				} {
					got, _ := r.ToolResult(want.id)
					if !strings.HasPrefix(got.ContentText(), want.text) || got.IsError != want.isError {
						return fmt.Errorf("tool_result %s = %q is_error %v, want %q is_error %v", want.id, got.ContentText(), got.IsError, want.text, want.isError)
					}
				}
				return nil
			},
			Text: "I see the error.",
		},
	)
	h := anthropicHarness(t, srv, llm.Options{Tools: []string{"box"}}, box)
	res, err := h.chat(context.Background(), "try it", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "I see the error." {
		t.Errorf("result %q", got)
	}
}

func TestAnthropicMaxSteps(t *testing.T) {
	call := llmserver.AnthropicTurn{ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"again"}`}}}
	srv := llmserver.StartAnthropic(call, call, llmserver.AnthropicTurn{
		Check: func(r *llmserver.AnthropicRequest) error {
			// "continue": the last tool result and the new text share one
			// user message, the result first.
			if got := anthropicShape(r); got[len(got)-1] != "user:tool_result,text" {
				return fmt.Errorf("messages %v", got)
			}
			return nil
		},
		Text: "ok, stopping",
	})
	h := anthropicHarness(t, srv, llm.Options{Tools: []string{"echo"}, MaxSteps: 2})
	res, err := h.chat(context.Background(), "loop forever", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !res.IsError || !strings.Contains(got, "stopped after 2 steps") {
		t.Errorf("result %q (isError %v), want a max-steps stop", got, res.IsError)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
	res, err = h.chat(context.Background(), "continue", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "ok, stopping" {
		t.Errorf("result after continue %q", got)
	}
}

func TestAnthropicInterrupt(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{Arrived: arrived, Hold: release, ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"x"}`}}},
		llmserver.AnthropicTurn{Text: "continued"},
	)
	h := anthropicHarness(t, srv, llm.Options{Tools: []string{"echo"}})
	type out struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := h.chat(context.Background(), "go", nil)
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
		t.Errorf("result %q", got)
	}
	if srv.Remaining() != 1 {
		t.Fatal("the model got a second request after the interrupt")
	}
	res, err := h.chat(context.Background(), "continue", nil)
	if err != nil || resultText(t, res) != "continued" {
		t.Fatalf("chat after interrupt: %v, %+v", err, res)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestAnthropicRetry(t *testing.T) {
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{Status: 429, RetryAfter: "0", Error: "Number of request tokens has exceeded your per-minute rate limit"},
		llmserver.AnthropicTurn{Status: 529, RetryAfter: "0", Error: "Overloaded"},
		llmserver.AnthropicTurn{Text: "finally"},
	)
	h := anthropicHarness(t, srv, llm.Options{})
	rec := &recorder{}
	res, err := h.chat(context.Background(), "hi", rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "finally" {
		t.Errorf("result %q", got)
	}
	if u := rec.stepData("usage"); len(u) != 1 || u[0]["attempts"] != 3.0 {
		t.Errorf("usage %v, want attempts 3", u)
	}
}

func TestAnthropicWrongKey(t *testing.T) {
	t.Setenv("NERVE_TEST_ANTHROPIC_KEY", "sk-ant-wrong")
	srv := llmserver.StartAnthropic(llmserver.AnthropicTurn{Text: "never"})
	srv.RequireKey("sk-ant-right")
	h := anthropicHarness(t, srv, llm.Options{APIKey: "${NERVE_TEST_ANTHROPIC_KEY}"})
	_, err := h.chat(context.Background(), "hi", nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"refused the API key (401 Unauthorized): invalid x-api-key", "'${ANTHROPIC_API_KEY}'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "sk-ant-wrong") {
		t.Errorf("the error shows the key: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests: a 401 was retried", n)
	}
	if n := len(h.agent().Messages()); n != 0 {
		t.Errorf("conversation has %d messages after a failed first step", n)
	}
}

// savedBeforeAnthropic is a conversation as the llm node saved it before
// the Anthropic provider existed (with the OpenAI one): a tool call, its
// result (no is_error field) and an answer.
const savedBeforeAnthropic = `{"version":1,"messages":[
	{"role":"user","content":"list /tmp"},
	{"role":"assistant","content":"Looking.","tool_calls":[{"id":"call_abc","name":"echo__identity","arguments":"{\"text\":\"a.txt b.txt\"}"}]},
	{"role":"tool","content":"a.txt b.txt","tool_call_id":"call_abc","name":"echo__identity"},
	{"role":"assistant","content":"Two files: a.txt and b.txt."}]}`

// TestAnthropicResumesSavedConversation: a conversation saved by an
// earlier nerve (OpenAI provider) continues with --provider anthropic, and
// survives a restart of the session.
func TestAnthropicResumesSavedConversation(t *testing.T) {
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{
			Check: func(r *llmserver.AnthropicRequest) error {
				if got, want := anthropicShape(r), []string{"user:text", "assistant:text,tool_use", "user:tool_result", "assistant:text", "user:text"}; !slices.Equal(got, want) {
					return fmt.Errorf("messages %v, want %v", got, want)
				}
				use := r.Messages[1].Blocks()[1]
				res, _ := r.ToolResult("call_abc")
				if use.ID != "call_abc" || string(use.Input) != `{"text":"a.txt b.txt"}` || res.ContentText() != "a.txt b.txt" {
					return fmt.Errorf("tool_use %+v, result %+v", use, res)
				}
				if r.Last().Text() != "which is first?" {
					return fmt.Errorf("last message %q", r.Last().Text())
				}
				return nil
			},
			Text: "a.txt.",
		},
		llmserver.AnthropicTurn{
			Check: func(r *llmserver.AnthropicRequest) error {
				if got := anthropicShape(r); len(got) != 7 || r.Messages[5].Text() != "a.txt." || r.Last().Text() != "and the other?" {
					return fmt.Errorf("after the restart the model got %v", got)
				}
				return nil
			},
			Text: "b.txt.",
		},
	)
	defer srv.Close()
	opts, _ := json.Marshal(llm.Options{Provider: llm.ProviderAnthropic, BaseURL: srv.URL, Model: "claude-test"})
	specs := []node.Spec{
		{ID: "echo", Kind: identity.Kind},
		{ID: "agent", Kind: llm.Kind, Options: opts, State: json.RawMessage(savedBeforeAnthropic)},
	}
	for i, msg := range []string{"which is first?", "and the other?"} {
		// Each round is a daemon start: a new session restored from the
		// specs the last one saved.
		h := &harness{t: t}
		h.s = session.New("test", registry(), &session.Options{Save: func(s []node.Spec) error {
			h.mu.Lock()
			h.save = s
			h.mu.Unlock()
			return nil
		}})
		if err := h.s.Restore(context.Background(), specs); err != nil {
			t.Fatal(err)
		}
		if d := h.agent().Info().Details; d["state_error"] != nil || d["messages"] != 4+2*i {
			t.Fatalf("restored agent: %v", d)
		}
		res, err := h.chat(context.Background(), msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Err(); err != nil {
			t.Fatal(err)
		}
		if got, want := resultText(t, res), []string{"a.txt.", "b.txt."}[i]; got != want {
			t.Errorf("round %d: result %q, want %q", i, got, want)
		}
		specs = h.specs()
		if err := h.s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAnthropicSample(t *testing.T) {
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{
			Check: func(r *llmserver.AnthropicRequest) error {
				if len(r.Tools) != 0 || r.MaxTokens == nil || *r.MaxTokens != 50 || r.Temperature == nil || *r.Temperature != 0.5 {
					return fmt.Errorf("tools %v, max_tokens %v, temperature %v", r.ToolNames(), r.MaxTokens, r.Temperature)
				}
				if r.SystemText() != "You are a poet." || !slices.Equal(r.StopSequences, []string{"\n\n"}) {
					return fmt.Errorf("system %q stop %q", r.SystemText(), r.StopSequences)
				}
				if got := anthropicShape(r); !slices.Equal(got, []string{"user:text,image"}) || r.Last().Text() != "a haiku about this" {
					return fmt.Errorf("messages %v", got)
				}
				return nil
			},
			Text: "old pond / frog jumps",
		},
		llmserver.AnthropicTurn{Text: "cut", StopReason: "max_tokens"},
	)
	h := anthropicHarness(t, srv, llm.Options{Tools: []string{"*"}, Stream: ptr(false)})
	res, err := h.agent().Sample(context.Background(), &mcp.CreateMessageParams{
		MaxTokens: 50, Temperature: 0.5, StopSequences: []string{"\n\n"},
		SystemPrompt: "You are a poet.",
		Messages: []*mcp.SamplingMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "a haiku about this"}},
			{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}}},
		},
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
	res, err = h.agent().Sample(context.Background(), &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "more"}}}})
	if err != nil || res.StopReason != "maxTokens" {
		t.Errorf("second sample: %v, %+v (want stopReason maxTokens)", err, res)
	}
	if n := len(h.agent().Messages()); n != 0 {
		t.Errorf("sampling changed the conversation (%d messages)", n)
	}
}
