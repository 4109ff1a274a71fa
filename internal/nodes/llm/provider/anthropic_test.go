package provider

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/httpretry"
)

func TestAnthropicURL(t *testing.T) {
	tests := []struct{ base, want string }{
		{"https://api.anthropic.com", "https://api.anthropic.com/v1/messages"},
		{"https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"},
		{"https://api.anthropic.com/v1", "https://api.anthropic.com/v1/messages"},
		{"https://proxy.example/anthropic/v1/messages", "https://proxy.example/anthropic/v1/messages"},
		{"http://127.0.0.1:4000/anthropic?k=1", "http://127.0.0.1:4000/anthropic/v1/messages?k=1"},
	}
	for _, tt := range tests {
		if got := NewAnthropic(Config{BaseURL: tt.base}).URL(); got != tt.want {
			t.Errorf("base %s: URL %s, want %s", tt.base, got, tt.want)
		}
	}
}

// TestAnthropicRequestBody sends a conversation holding every kind of
// message the llm node saves, and checks the server (which refuses what
// the Messages API refuses) got it in the API's shape.
func TestAnthropicRequestBody(t *testing.T) {
	srv := llmserver.StartAnthropic(llmserver.AnthropicTurn{Text: "ok"})
	defer srv.Close()
	temp := 0.2
	c := NewAnthropic(Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Headers: map[string]string{"anthropic-beta": "x"}, Stream: true})
	res, err := c.Chat(context.Background(), &Request{
		Model: "claude-test", System: "sys", Temperature: &temp, Stop: []string{"END"},
		Messages: []Message{
			{Role: RoleUser, Content: "[Earlier messages were removed …]"},
			{Role: RoleUser, Content: "look", Images: []Image{{MIMEType: "image/png", Data: []byte{1, 2}}}},
			{Role: RoleAssistant, Content: "Calling.", ToolCalls: []ToolCall{{ID: "c1", Name: "t", Arguments: `{"a":1}`}, {ID: "c2", Name: "t", Arguments: `{"a":`}}},
			{Role: RoleTool, ToolCallID: "c1", Name: "t", Content: "result"},
			{Role: RoleTool, ToolCallID: "c2", Name: "t", Content: "Error: the arguments of t are not valid JSON", IsError: true},
			{Role: RoleAssistant, Content: ""}, // an empty answer
			{Role: RoleUser, Content: "go on"},
		},
		Tools: []Tool{{Name: "t", Description: "d", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if res.Text != "ok" || res.FinishReason != "end_turn" || res.Usage == nil || res.Usage.TotalTokens == 0 {
		t.Errorf("response %+v", res)
	}
	r := srv.Requests()[0]
	body := string(r.Body)
	for _, want := range []string{
		`"model":"claude-test"`, `"max_tokens":4096`, `"system":"sys"`, `"stream":true`, `"temperature":0.2`, `"stop_sequences":["END"]`,
		`{"role":"user","content":[{"type":"text","text":"[Earlier messages were removed …]"},{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQI="}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"Calling."},{"type":"tool_use","id":"c1","name":"t","input":{"a":1}},{"type":"tool_use","id":"c2","name":"t","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"result"},{"type":"tool_result","tool_use_id":"c2","content":"Error: the arguments of t are not valid JSON","is_error":true},{"type":"text","text":"go on"}]}`,
		`"tools":[{"name":"t","description":"d","input_schema":{"properties":{},"type":"object"}}]`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request body lacks %s\n%s", want, body)
		}
	}
	if len(r.Messages) != 3 {
		t.Errorf("%d messages, want 3 (same roles merged, the empty answer left out)", len(r.Messages))
	}
	for k, want := range map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "anthropic-beta": "x", "Content-Type": "application/json", "Authorization": ""} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
}

func TestAnthropicAnswers(t *testing.T) {
	turn := llmserver.AnthropicTurn{
		Thinking: "The user wants two files.",
		Text:     "Reading both.",
		ToolCalls: []llmserver.ToolCall{
			{ID: "toolu_a", Name: "fs__read_file", Arguments: `{"path":"/tmp/a","opts":{"lines":[1,2]}}`},
			{ID: "toolu_b", Name: "fs__read_file", Arguments: `{"path":"/tmp/b"}`},
		},
		Chunks: 7, // the input is cut mid-token
	}
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "json"}[stream], func(t *testing.T) {
			srv := llmserver.StartAnthropic(turn)
			defer srv.Close()
			var text, reasoning strings.Builder
			res, err := NewAnthropic(Config{BaseURL: srv.URL, Stream: stream}).Chat(context.Background(),
				&Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "read a and b"}}},
				func(d Delta) { text.WriteString(d.Text); reasoning.WriteString(d.Reasoning) })
			if err != nil {
				t.Fatal(err)
			}
			want := []ToolCall{
				{ID: "toolu_a", Name: "fs__read_file", Arguments: `{"path":"/tmp/a","opts":{"lines":[1,2]}}`},
				{ID: "toolu_b", Name: "fs__read_file", Arguments: `{"path":"/tmp/b"}`},
			}
			if !slices.Equal(res.ToolCalls, want) {
				t.Errorf("tool calls %+v, want %+v", res.ToolCalls, want)
			}
			if res.Text != "Reading both." || text.String() != "Reading both." || res.Reasoning != turn.Thinking || reasoning.String() != turn.Thinking {
				t.Errorf("text %q (streamed %q), reasoning %q (streamed %q)", res.Text, text.String(), res.Reasoning, reasoning.String())
			}
			if res.FinishReason != "tool_use" || res.Model != "m" || res.Usage == nil || res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 {
				t.Errorf("finish %q model %q usage %+v", res.FinishReason, res.Model, res.Usage)
			}
		})
	}
}

func TestAnthropicReadStream(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		text      string
		calls     []ToolCall
		finish    string
		usage     Usage
		errSubstr string
	}{
		{
			name: "events without event: lines, CRLF, an unknown event, ping, cache tokens",
			body: "data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\r\n\r\n" +
				"data: {\"type\":\"ping\"}\r\n\r\n" +
				"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"x\",\"input\":{}}}\r\n\r\n" +
				"data: {\"type\":\"something_new\",\"index\":0}\r\n\r\n" +
				"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": \\\"a b\"}}\r\n\r\n" +
				"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"c\\\"}\"}}\r\n\r\n" +
				"data: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n" +
				"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\r\n\r\n" +
				"data: {\"type\":\"message_stop\"}\r\n\r\n",
			calls:  []ToolCall{{ID: "t1", Name: "x", Arguments: `{"q": "a bc"}`}},
			finish: "tool_use",
			usage:  Usage{PromptTokens: 15, CompletionTokens: 12, TotalTokens: 27},
		},
		{
			name: "a tool without input pieces keeps the empty object",
			body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"x\",\"input\":{}}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			calls: []ToolCall{{ID: "t1", Name: "x", Arguments: `{}`}},
		},
		{
			name:      "an error event",
			body:      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}\n\n",
			errSubstr: "rejected the request (400 Bad Request): prompt is too long",
		},
		{
			name:      "cut off",
			body:      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			errSubstr: "no message_stop",
		},
		{
			name:      "a delta for a block that never started",
			body:      "data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
			errSubstr: "block 3, which did not start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := rawSSE(t, tt.body)
			c := NewAnthropic(Config{BaseURL: srv.URL, Stream: true, Retry: httpretry.Policy{Attempts: 1}})
			res, err := c.Chat(context.Background(), &Request{Model: "m"}, nil)
			if tt.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSubstr) {
					t.Fatalf("err = %v, want %q", err, tt.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.text || res.FinishReason != tt.finish || !slices.Equal(res.ToolCalls, tt.calls) {
				t.Errorf("text %q finish %q calls %+v", res.Text, res.FinishReason, res.ToolCalls)
			}
			if tt.usage != (Usage{}) && (res.Usage == nil || *res.Usage != tt.usage) {
				t.Errorf("usage %+v, want %+v", res.Usage, tt.usage)
			}
		})
	}
}

func TestAnthropicRetries(t *testing.T) {
	srv := llmserver.StartAnthropic(
		llmserver.AnthropicTurn{Status: 429, RetryAfter: "7", Error: "Number of request tokens has exceeded your per-minute rate limit"},
		llmserver.AnthropicTurn{Status: 529, Error: "Overloaded"},
		llmserver.AnthropicTurn{StreamError: "overloaded_error", Error: "Overloaded"},
		llmserver.AnthropicTurn{Text: "ok"},
	)
	defer srv.Close()
	var sl sleeps
	c := NewAnthropic(Config{BaseURL: srv.URL, Stream: true, Sleep: sl.sleep})
	res, err := c.Chat(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "ok" || res.Attempts != 4 {
		t.Errorf("text %q attempts %d, want ok after 4", res.Text, res.Attempts)
	}
	if len(sl.d) != 3 || sl.d[0] != 7*time.Second {
		t.Fatalf("delays %v, want 7s (retry-after) then two backoffs", sl.d)
	}
}

func TestAnthropicErrorsAreClear(t *testing.T) {
	tests := []struct {
		name string
		turn llmserver.AnthropicTurn
		want []string
	}{
		{"401", llmserver.AnthropicTurn{Status: 401, Error: "invalid x-api-key"}, []string{"refused the API key (401 Unauthorized): invalid x-api-key", "${ANTHROPIC_API_KEY}", "x-api-key"}},
		{"403", llmserver.AnthropicTurn{Status: 403, Error: "Your API key does not have permission to use the specified resource."}, []string{"(403 Forbidden): Your API key does not have permission"}},
		{"404", llmserver.AnthropicTurn{Status: 404, Error: "model: claude-9"}, []string{"404 Not Found", "model: claude-9", "/v1/messages is added", "--model"}},
		{"400", llmserver.AnthropicTurn{Status: 400, Error: "tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"}, []string{"rejected the request (400 Bad Request): tools.0.custom.input_schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmserver.StartAnthropic(tt.turn, llmserver.AnthropicTurn{Text: "never"})
			defer srv.Close()
			var sl sleeps
			_, err := NewAnthropic(Config{BaseURL: srv.URL, Sleep: sl.sleep}).Chat(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
			var se *StatusError
			if !errors.As(err, &se) || se.Status != tt.turn.Status {
				t.Fatalf("err = %v, want a %d StatusError", err, tt.turn.Status)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if srv.Remaining() != 1 || len(sl.d) != 0 {
				t.Errorf("a %s was retried", tt.name)
			}
		})
	}
}

// BenchmarkReadAnthropicStream parses a streamed answer of 200 text
// deltas and a tool_use whose input comes in 50 input_json_delta pieces.
func BenchmarkReadAnthropicStream(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range 200 {
		sb.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n")
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"fs__read_file\",\"input\":{}}}\n\n")
	for range 50 {
		sb.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pa\"}}\n\n")
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
	sb.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":300}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	body := sb.String()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, err := readAnthropicStream(strings.NewReader(body), func(Delta) {}, ""); err != nil {
			b.Fatal(err)
		}
	}
}
