package provider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// AnthropicVersion is the anthropic-version header sent with every
// request; Config.Headers may override it.
const AnthropicVersion = "2023-06-01"

// DefaultAnthropicMaxTokens is sent as max_tokens, which the Messages API
// requires, when the request sets none.
const DefaultAnthropicMaxTokens = 4096

// Anthropic is a client of the Anthropic Messages API
// (https://docs.anthropic.com/en/api/messages).
type Anthropic struct {
	cfg Config
	ep  endpoint
}

// NewAnthropic returns a client for cfg. cfg.BaseURL is the API root
// (https://api.anthropic.com); "/v1/messages" is added to it, or only
// "/messages" when it already ends in /v1.
func NewAnthropic(cfg Config) *Anthropic {
	c := cfg.withDefaults()
	return &Anthropic{cfg: c, ep: newEndpoint(&c, "anthropic", func(p string) string {
		p = strings.TrimRight(p, "/")
		switch {
		case strings.HasSuffix(p, "/v1/messages"):
			return p
		case strings.HasSuffix(p, "/v1"):
			return p + "/messages"
		}
		return p + "/v1/messages"
	})}
}

// URL returns the endpoint requests are sent to.
func (c *Anthropic) URL() string { return c.ep.url }

// Wire types of the Messages API.
type (
	anRequest struct {
		Model         string      `json:"model"`
		MaxTokens     int         `json:"max_tokens"`
		System        string      `json:"system,omitempty"`
		Messages      []anMessage `json:"messages"`
		Tools         []anTool    `json:"tools,omitempty"`
		Stream        bool        `json:"stream,omitempty"`
		Temperature   *float64    `json:"temperature,omitempty"`
		StopSequences []string    `json:"stop_sequences,omitempty"`
	}
	anMessage struct {
		Role    string    `json:"role"`
		Content []anBlock `json:"content"`
	}
	// anBlock is every kind of content block, sent and received.
	anBlock struct {
		Type string `json:"type"`
		// text
		Text string `json:"text,omitempty"`
		// tool_use
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
		// tool_result
		ToolUseID string `json:"tool_use_id,omitempty"`
		Content   string `json:"content,omitempty"`
		IsError   bool   `json:"is_error,omitempty"`
		// image
		Source *anSource `json:"source,omitempty"`
		// thinking (received only)
		Thinking string `json:"thinking,omitempty"`
	}
	anSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	anTool struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema any    `json:"input_schema"`
	}
	anUsage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	}
	anResponse struct {
		Type       string    `json:"type"`
		Model      string    `json:"model"`
		Content    []anBlock `json:"content"`
		StopReason string    `json:"stop_reason"`
		Usage      *anUsage  `json:"usage"`
	}
	// anEvent is one streamed event; which fields are set depends on Type.
	anEvent struct {
		Type         string      `json:"type"`
		Message      *anResponse `json:"message"`
		Index        int         `json:"index"`
		ContentBlock *anBlock    `json:"content_block"`
		Delta        *struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			Thinking    string `json:"thinking"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage *anUsage `json:"usage"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
)

func (u *anUsage) usage() *Usage {
	if u == nil {
		return nil
	}
	in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return &Usage{PromptTokens: in, CompletionTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
}

func (c *Anthropic) body(req *Request) ([]byte, error) {
	w := anRequest{
		Model:         req.Model,
		MaxTokens:     req.MaxTokens,
		System:        req.System,
		Messages:      anthropicMessages(req.Messages),
		Stream:        c.cfg.Stream,
		Temperature:   req.Temperature,
		StopSequences: req.Stop,
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = DefaultAnthropicMaxTokens
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
	}
	return json.Marshal(w)
}

// anthropicMessages converts the neutral conversation to the Messages
// API's: tool calls become tool_use blocks of the assistant's message,
// tool messages tool_result blocks of the next user message (before any
// text, as the API requires), and messages of the same role in a row are
// merged into one. Empty text is left out: the API refuses empty text
// blocks and messages without content.
func anthropicMessages(msgs []Message) []anMessage {
	out := make([]anMessage, 0, len(msgs))
	add := func(role string, blocks ...anBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anMessage{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		var blocks []anBlock
		switch m.Role {
		case RoleTool:
			add(RoleUser, anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content, IsError: m.IsError})
			continue
		case RoleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
			}
		default:
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, img := range m.Images {
				blocks = append(blocks, anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: img.MIMEType, Data: base64.StdEncoding.EncodeToString(img.Data)}})
			}
		}
		add(m.Role, blocks...)
	}
	return out
}

// toolInput is a tool call's arguments as tool_use input, which must be a
// JSON object. Arguments a model wrote that are not one (possible in a
// conversation begun with another provider) are sent as {}: the tool
// result that follows already quotes them and says what was wrong.
func toolInput(args string) json.RawMessage {
	b := bytes.TrimSpace([]byte(args))
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return b
	}
	return json.RawMessage("{}")
}

// Chat sends req, retrying 429/529/5xx answers (and an overloaded or
// rate-limit error event that arrives before any text) and lost
// connections with exponential backoff, honouring retry-after.
func (c *Anthropic) Chat(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return traced(ctx, "anthropic", req.Model, c.ep.display, func(ctx context.Context) (*Response, error) {
		return withRetries(ctx, &c.cfg, onDelta, func(ctx context.Context, onDelta func(Delta)) (*Response, error) {
			return c.ep.post(ctx, body, c.setHeaders, func(resp *http.Response) (*Response, error) {
				if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					return readAnthropicStream(resp.Body, onDelta, c.ep.display)
				}
				return readAnthropicJSON(resp.Body, onDelta)
			})
		})
	})
}

func (c *Anthropic) setHeaders(h http.Header) {
	h.Set("anthropic-version", AnthropicVersion)
	if c.cfg.APIKey != "" {
		h.Set("x-api-key", c.cfg.APIKey)
	}
}

// response assembles a Response from content blocks.
func anthropicResponse(model, stop string, blocks []anBlock, usage *anUsage) *Response {
	res := &Response{Model: model, FinishReason: stop, Usage: usage.usage()}
	var text, reason strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			reason.WriteString(b.Thinking)
		case "tool_use":
			args := strings.TrimSpace(string(b.Input))
			if args == "" || args == "null" {
				args = "{}"
			}
			res.ToolCalls = append(res.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	res.Text, res.Reasoning = text.String(), reason.String()
	return res
}

func readAnthropicJSON(r io.Reader, onDelta func(Delta)) (*Response, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, &transportError{fmt.Errorf("reading the answer: %w", err)}
	}
	var w anResponse
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("the provider's answer is not JSON (%w): %.200s", err, b)
	}
	if w.Type == "error" {
		return nil, fmt.Errorf("the provider reported an error: %s", errorMessage(b))
	}
	if w.Type != "message" {
		return nil, fmt.Errorf("the provider's answer is not a message (type %q): %.200s", w.Type, b)
	}
	res := anthropicResponse(w.Model, w.StopReason, w.Content, w.Usage)
	if onDelta != nil && (res.Text != "" || res.Reasoning != "") {
		onDelta(Delta{Text: res.Text, Reasoning: res.Reasoning})
	}
	return res, nil
}

// streamErrorStatus gives an error event the HTTP status the same error
// has when it comes as an answer, so that an overload or a rate limit met
// before anything streamed is retried like one.
var streamErrorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"overloaded_error":      statusOverloaded,
}

// readAnthropicStream reads a streamed answer: message_start, then for
// each content block content_block_start, its deltas (text_delta,
// input_json_delta pieces of a tool's input, thinking_delta, …) and
// content_block_stop, then message_delta (stop_reason, usage) and
// message_stop; ping events may come anywhere, an error event ends it.
func readAnthropicStream(r io.Reader, onDelta func(Delta), display string) (*Response, error) {
	if onDelta == nil {
		onDelta = func(Delta) {}
	}
	type block struct {
		anBlock
		input strings.Builder // input_json_delta pieces
	}
	var (
		blocks  = map[int]*block{}
		model   string
		stop    string
		usage   anUsage
		started bool
		done    bool
	)
	handle := func(name string, payload []byte) error {
		var ev anEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return fmt.Errorf("a streamed event is not JSON (%w): %.200s", err, payload)
		}
		if ev.Type == "" {
			ev.Type = name
		}
		switch ev.Type {
		case "message_start":
			started = true
			if ev.Message != nil {
				model = ev.Message.Model
				if ev.Message.Usage != nil {
					usage = *ev.Message.Usage
				}
			}
		case "content_block_start":
			if ev.ContentBlock == nil {
				return fmt.Errorf("content_block_start %d has no content_block: %.200s", ev.Index, payload)
			}
			b := &block{anBlock: *ev.ContentBlock}
			blocks[ev.Index] = b
			if b.Text != "" || b.Thinking != "" {
				onDelta(Delta{Text: b.Text, Reasoning: b.Thinking})
			}
		case "content_block_delta":
			b := blocks[ev.Index]
			if b == nil || ev.Delta == nil {
				return fmt.Errorf("content_block_delta for block %d, which did not start: %.200s", ev.Index, payload)
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.Text += ev.Delta.Text
				onDelta(Delta{Text: ev.Delta.Text})
			case "thinking_delta":
				b.Thinking += ev.Delta.Thinking
				onDelta(Delta{Reasoning: ev.Delta.Thinking})
			case "input_json_delta":
				b.input.WriteString(ev.Delta.PartialJSON)
			}
			// signature_delta and deltas of newer block kinds carry
			// nothing nerve keeps.
		case "content_block_stop":
			// A block is complete; it is assembled at message_stop.
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				stop = ev.Delta.StopReason
			}
			if u := ev.Usage; u != nil {
				// Counts in message_delta are cumulative.
				if u.OutputTokens > 0 {
					usage.OutputTokens = u.OutputTokens
				}
				if u.InputTokens > 0 {
					usage.InputTokens = u.InputTokens
				}
			}
		case "message_stop":
			done = true
		case "error":
			typ, msg := "", errorMessage(payload)
			if ev.Error != nil {
				typ = ev.Error.Type
			}
			if status, ok := streamErrorStatus[typ]; ok {
				return &StatusError{Status: status, Message: msg + " (in the stream)", URL: display, Provider: "anthropic"}
			}
			return fmt.Errorf("the provider reported an error mid-stream: %s", msg)
		}
		// ping and unknown events (the API may add some) are skipped.
		return nil
	}
	err := readSSE(r, func(name string, data []byte) (bool, error) {
		err := handle(name, data)
		return done, err
	})
	if err != nil {
		return nil, err
	}
	if !started || !done {
		return nil, &transportError{errors.New("the stream ended before the answer was complete (no message_stop)")}
	}
	idx := make([]int, 0, len(blocks))
	for i := range blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	list := make([]anBlock, 0, len(idx))
	for _, i := range idx {
		b := blocks[i]
		if b.Type == "tool_use" && b.input.Len() > 0 {
			// The input streamed as pieces of JSON text replaces the
			// empty object of content_block_start.
			b.Input = json.RawMessage(b.input.String())
		}
		list = append(list, b.anBlock)
	}
	return anthropicResponse(model, stop, list, &usage), nil
}
