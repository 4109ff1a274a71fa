package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
)

// BenchmarkChat is one chat call answered with text by the scripted server
// over loopback HTTP: the node's own cost per model round trip (session
// call, request encoding, SSE parsing, events, saving the conversation).
func BenchmarkChat(b *testing.B) {
	for _, stream := range []bool{true, false} {
		name := "stream"
		if !stream {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			srv := llmserver.Start()
			h := newHarness(b, srv, llm.Options{Stream: ptr(stream)})
			defer h.s.Close(context.Background())
			defer srv.Close()
			turn := llmserver.Turn{Text: strings.Repeat("word ", 100)}
			for range b.N {
				srv.Add(turn)
			}
			rec := &recorder{}
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, err := h.chat(ctx, "hello", rec); err != nil {
					b.Fatal(err)
				}
				_ = h.agent().Reset(ctx)
				rec.events = rec.events[:0]
			}
		})
	}
}

// BenchmarkToolStep is one chat call with a tool step: the model asks for
// an identity call, gets its result and answers (two model requests).
func BenchmarkToolStep(b *testing.B) {
	srv := llmserver.Start()
	h := newHarness(b, srv, llm.Options{Tools: []string{"*"}})
	defer h.s.Close(context.Background())
	defer srv.Close()
	for range b.N {
		srv.Add(
			llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"hi"}`}}},
			llmserver.Turn{Text: "done"},
		)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := h.chat(ctx, "go", nil); err != nil {
			b.Fatal(err)
		}
		_ = h.agent().Reset(ctx)
	}
}

// BenchmarkChatAnthropic is BenchmarkChat with --provider anthropic: one
// chat call answered with text by the scripted Messages API server.
func BenchmarkChatAnthropic(b *testing.B) {
	for _, stream := range []bool{true, false} {
		name := "stream"
		if !stream {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			srv := llmserver.StartAnthropic()
			h := anthropicHarness(b, srv, llm.Options{Stream: ptr(stream)})
			defer h.s.Close(context.Background())
			defer srv.Close()
			turn := llmserver.AnthropicTurn{Text: strings.Repeat("word ", 100)}
			for range b.N {
				srv.Add(turn)
			}
			rec := &recorder{}
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, err := h.chat(ctx, "hello", rec); err != nil {
					b.Fatal(err)
				}
				_ = h.agent().Reset(ctx)
				rec.events = rec.events[:0]
			}
		})
	}
}

// BenchmarkToolStepAnthropic is BenchmarkToolStep with --provider
// anthropic (tool input streamed as input_json_delta pieces).
func BenchmarkToolStepAnthropic(b *testing.B) {
	srv := llmserver.StartAnthropic()
	h := anthropicHarness(b, srv, llm.Options{Tools: []string{"*"}})
	defer h.s.Close(context.Background())
	defer srv.Close()
	for range b.N {
		srv.Add(
			llmserver.AnthropicTurn{ToolCalls: []llmserver.ToolCall{{Name: "echo__identity", Arguments: `{"text":"hi"}`}}},
			llmserver.AnthropicTurn{Text: "done"},
		)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := h.chat(ctx, "go", nil); err != nil {
			b.Fatal(err)
		}
		_ = h.agent().Reset(ctx)
	}
}
