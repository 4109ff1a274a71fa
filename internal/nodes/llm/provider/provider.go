// Package provider is the llm node's client of model APIs: the
// OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, GLM, vLLM,
// llama.cpp server, Ollama) and the Anthropic Messages API, each streamed
// over SSE or not, with tool calling, retries with backoff on 429/529/5xx
// and clear errors for the rest. Both sit behind Client; conversations are
// kept in one provider-neutral form (Message) and converted to each wire
// format only when sent.
//
// It knows nothing of nodes or sessions; only internal/nodes/llm imports it.
package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/backoff"
	"github.com/nerve-dev/nerve/internal/httpretry"
)

// Conversation roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation, in a provider-neutral form that
// is also how the llm node saves conversations (keep the JSON stable).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// Images are sent along with a user message (sampling requests only).
	Images []Image `json:"images,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool a tool message answers (for people reading the
	// saved conversation; OpenAI ignores it).
	Name string `json:"name,omitempty"`
	// IsError marks a tool message whose tool failed (Anthropic's
	// tool_result is_error; OpenAI has no such flag, the text says
	// "Error: "). Absent in conversations saved before it existed.
	IsError bool `json:"is_error,omitempty"`
}

// Image is an image given to the model.
type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// ToolCall is one call of a tool the model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model wrote (it may be invalid).
	Arguments string `json:"arguments"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments (an object schema).
	Parameters any
}

// Request is one chat request.
type Request struct {
	Model       string
	System      string
	Messages    []Message
	Tools       []Tool
	Temperature *float64
	MaxTokens   int
	Stop        []string
}

// Usage is the token count the provider reported.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is the model's answer to one request.
type Response struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	// FinishReason is the provider's: "stop", "tool_calls", "length", …
	FinishReason string
	Usage        *Usage
	Model        string
	// Attempts is how many HTTP requests it took (1 + retries).
	Attempts int
}

// Delta is a piece of a streamed answer.
type Delta struct {
	Text      string
	Reasoning string
}

// Client sends chat requests to a model. Implementations are safe for
// concurrent use.
type Client interface {
	// Chat sends req and returns the answer. onDelta, if set, is called
	// with each piece of text as it streams in.
	Chat(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Config configures a client. Zero values mean defaults.
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:8080/v1; "/chat/completions" is added to it.
	BaseURL string
	// APIKey is sent as a bearer token when set. It is never logged.
	APIKey string
	// Headers are added to every request (and override the defaults).
	Headers map[string]string
	// Stream asks for SSE streaming.
	Stream bool
	// Timeout bounds one HTTP request, streaming included (default 5m).
	Timeout time.Duration
	// Retry is when and how often a turned-away request or a lost
	// connection is tried again (internal/httpretry); zero fields take
	// DefaultRetry's.
	Retry httpretry.Policy
	// HTTPClient is the client to use (default: a new one).
	HTTPClient *http.Client
	// Sleep waits between retries (default: a timer that honours ctx).
	// Tests replace it to see the delays chosen.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults.
const (
	DefaultTimeout = 5 * time.Minute
)

// DefaultRetry is a provider's retry: 5 tries in all; 0.5 s, 1 s, 2 s, 4 s
// (±25 %) between them when the provider names no Retry-After, which is
// honoured up to 2 minutes (asking for longer gets the error reported
// instead); for 408, 429, 500, 502, 503, 504 and Anthropic's 529. A chat
// request only asks, so it is safe to send again.
var DefaultRetry = httpretry.Policy{
	Attempts: 5,
	Base:     500 * time.Millisecond,
	Max:      2 * time.Minute,
	Statuses: []int{http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, statusOverloaded},
}

func (c *Config) withDefaults() Config {
	cfg := *c
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retry.Attempts <= 0 {
		cfg.Retry.Attempts = DefaultRetry.Attempts
	}
	if cfg.Retry.Base <= 0 {
		cfg.Retry.Base = DefaultRetry.Base
	}
	if cfg.Retry.Max <= 0 {
		cfg.Retry.Max = DefaultRetry.Max
	}
	if cfg.Retry.Statuses == nil {
		cfg.Retry.Statuses = DefaultRetry.Statuses
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = backoff.Sleep
	}
	return cfg
}

// StatusError is an HTTP error answer from the provider.
type StatusError struct {
	Status int
	// Message is the provider's own explanation, when it gave one.
	Message string
	URL     string
	// RetryAfter is how long the provider asked to wait (429, 503);
	// retryNamed says it named a time (0 then means at once).
	RetryAfter time.Duration
	retryNamed bool
	// Provider is the dialect ("openai", "anthropic"), for the advice.
	Provider string
}

// statusOverloaded is Anthropic's "overloaded" status, which net/http
// does not name.
const statusOverloaded = 529

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "(no message)"
	}
	text := http.StatusText(e.Status)
	if e.Status == statusOverloaded {
		text = "Overloaded"
	}
	status := strings.TrimSpace(fmt.Sprintf("%d %s", e.Status, text))
	anthropic := e.Provider == "anthropic"
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if anthropic {
			return fmt.Sprintf("the provider refused the API key (%s): %s; check --api-key (e.g. '${ANTHROPIC_API_KEY}', sent as x-api-key) and that the variable is set for the daemon", status, msg)
		}
		return fmt.Sprintf("the provider refused the API key (%s): %s; check --api-key (e.g. '${OPENAI_API_KEY}') and that the variable is set for the daemon", status, msg)
	case http.StatusNotFound:
		if anthropic {
			return fmt.Sprintf("not found at %s (%s): %s; check --base-url (e.g. https://api.anthropic.com; /v1/messages is added) and --model", e.URL, status, msg)
		}
		return fmt.Sprintf("not found at %s (%s): %s; check --base-url (most servers want it to end in /v1) and --model", e.URL, status, msg)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return fmt.Sprintf("the provider rejected the request (%s): %s", status, msg)
	case http.StatusTooManyRequests:
		return fmt.Sprintf("rate limited by the provider (%s): %s; wait and try again", status, msg)
	case statusOverloaded:
		return fmt.Sprintf("the provider is overloaded (%s): %s; try again later", status, msg)
	}
	if e.Status >= 500 {
		return fmt.Sprintf("the provider failed (%s): %s; try again later", status, msg)
	}
	return fmt.Sprintf("the provider answered %s: %s", status, msg)
}

// errorMessage digs the provider's explanation out of an error body:
// {"error":{"message":…}}, {"error":"…"}, {"message":…} or plain text.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var e struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			}
			if json.Unmarshal(v.Error, &e) == nil && e.Message != "" {
				return e.Message
			}
			var s string
			if json.Unmarshal(v.Error, &s) == nil && s != "" {
				return s
			}
		}
		if v.Message != "" {
			return v.Message
		}
		if v.Detail != "" {
			return v.Detail
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}
