package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/httpretry"
)

// sleeps records the delays the client chose instead of waiting them.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Status: 429, RetryAfter: "7", Error: "slow down"},
		llmserver.Turn{Status: 500},
		llmserver.Turn{Text: "ok"},
	)
	defer srv.Close()
	var sl sleeps
	c := NewOpenAI(Config{BaseURL: srv.URL, Stream: true, Sleep: sl.sleep})
	res, err := c.Chat(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "ok" || res.Attempts != 3 {
		t.Errorf("text %q attempts %d", res.Text, res.Attempts)
	}
	if len(sl.d) != 2 || sl.d[0] != 7*time.Second {
		t.Fatalf("delays %v, want 7s (Retry-After) then a backoff", sl.d)
	}
	// The second retry, without Retry-After: 0.5 s doubled, ±25 %.
	if sl.d[1] < 750*time.Millisecond || sl.d[1] > 1250*time.Millisecond {
		t.Errorf("second delay %v, want 1s ±25%%", sl.d[1])
	}
}

func TestRetryGivesUp(t *testing.T) {
	var turns []llmserver.Turn
	for range 5 {
		turns = append(turns, llmserver.Turn{Status: 502, Error: "bad gateway"})
	}
	srv := llmserver.Start(turns...)
	defer srv.Close()
	var sl sleeps
	c := NewOpenAI(Config{BaseURL: srv.URL, Retry: httpretry.Policy{Attempts: 3}, Sleep: sl.sleep})
	_, err := c.Chat(context.Background(), &Request{Model: "m"}, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 502 || !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "bad gateway") {
		t.Errorf("err = %v", err)
	}
	if len(srv.Requests()) != 3 {
		t.Errorf("%d requests, want 3", len(srv.Requests()))
	}
	// Too long a Retry-After is reported, not waited for.
	srv2 := llmserver.Start(llmserver.Turn{Status: 429, RetryAfter: "3600"})
	defer srv2.Close()
	c2 := NewOpenAI(Config{BaseURL: srv2.URL, Sleep: sl.sleep})
	if _, err := c2.Chat(context.Background(), &Request{Model: "m"}, nil); err == nil || !strings.Contains(err.Error(), "rate limited") {
		t.Errorf("err = %v", err)
	}
}

func TestConnectionRefusedIsRetriedThenExplained(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var sl sleeps
	c := NewOpenAI(Config{BaseURL: "http://" + addr + "/v1?key=SECRET", Retry: httpretry.Policy{Attempts: 2}, Sleep: sl.sleep})
	if c.URL() != "http://"+addr+"/v1/chat/completions?key=SECRET" {
		t.Errorf("endpoint %s", c.URL())
	}
	_, err = c.Chat(context.Background(), &Request{Model: "m"}, nil)
	if err == nil || !strings.Contains(err.Error(), "is the server running?") || len(sl.d) != 1 {
		t.Errorf("err = %v after %d retries", err, len(sl.d))
	}
	// A key in the URL's query never reaches an error message.
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error shows the query: %v", err)
	}
}

func TestWrongPathIs404WithAdvice(t *testing.T) {
	srv := llmserver.Start()
	defer srv.Close()
	c := NewOpenAI(Config{BaseURL: strings.TrimSuffix(srv.URL, "/v1")})
	_, err := c.Chat(context.Background(), &Request{Model: "m"}, nil)
	if err == nil || !strings.Contains(err.Error(), "Unknown request URL") || !strings.Contains(err.Error(), "end in /v1") {
		t.Errorf("err = %v", err)
	}
}

// rawSSE serves body as an SSE answer.
func rawSSE(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestReadStream(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		text      string
		calls     []ToolCall
		finish    string
		errSubstr string
	}{
		{
			name: "tool call deltas by index, interleaved, with comments",
			body: ": OPENROUTER PROCESSING\n\n" +
				`data: {"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"x__y","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"z","arguments":"{\"q\""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"p\":"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
				"data: [DONE]\n\n",
			calls:  []ToolCall{{ID: "a", Name: "x__y", Arguments: `{"p":1}`}, {ID: "b", Name: "z", Arguments: `{"q":2}`}},
			finish: "tool_calls",
		},
		{
			name: "no index and no id (some local servers), CRLF lines",
			body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"t\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\":1}\"}}]}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\r\n\r\n",
			calls:  []ToolCall{{ID: "call_0", Name: "t", Arguments: `{"a":1}`}},
			finish: "tool_calls",
		},
		{
			name: "text and a usage chunk",
			body: `data: {"choices":[{"delta":{"content":"Hel"}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}` + "\n\n" +
				"data: [DONE]\n\n",
			text:   "Hello",
			finish: "stop",
		},
		{
			name:      "an error inside the stream",
			body:      `data: {"error":{"message":"context length exceeded"}}` + "\n\n",
			errSubstr: "mid-stream: context length exceeded",
		},
		{
			name:      "cut off",
			body:      `data: {"choices":[{"delta":{"content":"Hel"}}]}` + "\n\n",
			errSubstr: "the stream ended before the answer was complete",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := rawSSE(t, tt.body)
			var sl sleeps
			c := NewOpenAI(Config{BaseURL: srv.URL, Stream: true, Retry: httpretry.Policy{Attempts: 1}, Sleep: sl.sleep})
			var streamed strings.Builder
			res, err := c.Chat(context.Background(), &Request{Model: "m"}, func(d Delta) { streamed.WriteString(d.Text) })
			if tt.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSubstr) {
					t.Fatalf("err = %v, want %q", err, tt.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.text || streamed.String() != tt.text || res.FinishReason != tt.finish || !slices.Equal(res.ToolCalls, tt.calls) {
				t.Errorf("got text %q (streamed %q) finish %q calls %+v", res.Text, streamed.String(), res.FinishReason, res.ToolCalls)
			}
		})
	}
}

func TestNonStreamedArgumentsAsObject(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"llama","choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}`)
	}))
	defer srv.Close()
	res, err := NewOpenAI(Config{BaseURL: srv.URL}).Chat(context.Background(), &Request{Model: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ToolCall{{ID: "call_0", Name: "f", Arguments: `{"a":1}`}}; !slices.Equal(res.ToolCalls, want) || res.Model != "llama" {
		t.Errorf("calls %+v model %q", res.ToolCalls, res.Model)
	}
}

func TestRequestBody(t *testing.T) {
	srv := llmserver.Start(llmserver.Turn{Text: "ok"})
	defer srv.Close()
	temp := 0.2
	c := NewOpenAI(Config{BaseURL: srv.URL + "/", APIKey: "k", Headers: map[string]string{"HTTP-Referer": "https://nerve.dev"}, Stream: true})
	_, err := c.Chat(context.Background(), &Request{
		Model: "m", System: "sys", Temperature: &temp, MaxTokens: 9,
		Messages: []Message{
			{Role: RoleUser, Content: "look", Images: []Image{{MIMEType: "image/png", Data: []byte{1, 2}}}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "t", Arguments: `{"a":1}`}}},
			{Role: RoleTool, ToolCallID: "c1", Content: "result"},
		},
		Tools: []Tool{{Name: "t", Description: "d", Parameters: map[string]any{"type": "object"}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	body := string(r.Body)
	for _, want := range []string{
		`"stream":true`, `"stream_options":{"include_usage":true}`, `"temperature":0.2`, `"max_tokens":9`,
		`{"role":"system","content":"sys"}`,
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,AQI="}}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{\"a\":1}"}}]}`,
		`{"role":"tool","content":"result","tool_call_id":"c1"}`,
		`"tools":[{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object"}}}]`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request body lacks %s\n%s", want, body)
		}
	}
	if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("HTTP-Referer") != "https://nerve.dev" {
		t.Errorf("headers %v", r.Header)
	}
}

// BenchmarkReadStream parses a streamed answer of 200 text chunks and a
// tool call whose arguments come in 50 pieces, as OpenAI sends them.
func BenchmarkReadStream(b *testing.B) {
	var sb strings.Builder
	for range 200 {
		sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"fs__read_file","arguments":""}}]}}]}` + "\n\n")
	for range 50 {
		sb.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}` + "\n\n")
	}
	sb.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n")
	body := sb.String()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, err := readStream(strings.NewReader(body), func(Delta) {}); err != nil {
			b.Fatal(err)
		}
	}
}
