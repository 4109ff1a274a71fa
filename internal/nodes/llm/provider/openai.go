package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// OpenAI is a client of the OpenAI-compatible Chat Completions API.
type OpenAI struct {
	cfg Config
	ep  endpoint
}

// NewOpenAI returns a client for cfg.
func NewOpenAI(cfg Config) *OpenAI {
	c := cfg.withDefaults()
	return &OpenAI{cfg: c, ep: newEndpoint(&c, "openai", func(p string) string {
		if strings.HasSuffix(p, "/chat/completions") {
			return p
		}
		return strings.TrimRight(p, "/") + "/chat/completions"
	})}
}

// URL returns the endpoint requests are sent to.
func (c *OpenAI) URL() string { return c.ep.url }

// Wire types of the Chat Completions API.
type (
	oaRequest struct {
		Model         string          `json:"model"`
		Messages      []oaMessage     `json:"messages"`
		Tools         []oaTool        `json:"tools,omitempty"`
		Stream        bool            `json:"stream,omitempty"`
		StreamOptions *oaStreamOpts   `json:"stream_options,omitempty"`
		Temperature   *float64        `json:"temperature,omitempty"`
		MaxTokens     int             `json:"max_tokens,omitempty"`
		Stop          []string        `json:"stop,omitempty"`
		Extra         json.RawMessage `json:"-"`
	}
	oaStreamOpts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	oaMessage struct {
		Role string `json:"role"`
		// Content is a string, an array of parts, or null (an assistant
		// message with only tool calls).
		Content    any          `json:"content"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
	}
	oaPart struct {
		Type     string      `json:"type"`
		Text     string      `json:"text,omitempty"`
		ImageURL *oaImageURL `json:"image_url,omitempty"`
	}
	oaImageURL struct {
		URL string `json:"url"`
	}
	oaTool struct {
		Type     string     `json:"type"`
		Function oaFunction `json:"function"`
	}
	oaFunction struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters,omitempty"`
	}
	oaToolCall struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name string `json:"name,omitempty"`
			// Arguments is a JSON string (OpenAI); some servers send
			// an object instead.
			Arguments json.RawMessage `json:"arguments,omitempty"`
		} `json:"function"`
	}
	oaResponse struct {
		Model   string `json:"model"`
		Choices []struct {
			Message      oaRespMessage `json:"message"`
			Delta        oaRespMessage `json:"delta"`
			FinishReason *string       `json:"finish_reason"`
		} `json:"choices"`
		Usage *Usage          `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	oaRespMessage struct {
		Content          *string      `json:"content"`
		ReasoningContent *string      `json:"reasoning_content"`
		Reasoning        *string      `json:"reasoning"`
		ToolCalls        []oaToolCall `json:"tool_calls"`
	}
)

func (c *OpenAI) body(req *Request) ([]byte, error) {
	w := oaRequest{
		Model:       req.Model,
		Stream:      c.cfg.Stream,
		Temperature: req.Temperature,
		MaxTokens:   req.MaxTokens,
		Stop:        req.Stop,
	}
	if c.cfg.Stream {
		w.StreamOptions = &oaStreamOpts{IncludeUsage: true}
	}
	if req.System != "" {
		w.Messages = append(w.Messages, oaMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		w.Messages = append(w.Messages, toOpenAI(m))
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, oaTool{Type: "function", Function: oaFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return json.Marshal(w)
}

func toOpenAI(m Message) oaMessage {
	o := oaMessage{Role: m.Role, ToolCallID: m.ToolCallID, Content: m.Content}
	if len(m.Images) > 0 {
		var parts []oaPart
		if m.Content != "" {
			parts = append(parts, oaPart{Type: "text", Text: m.Content})
		}
		for _, img := range m.Images {
			url := "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
			parts = append(parts, oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: url}})
		}
		o.Content = parts
	}
	for _, tc := range m.ToolCalls {
		var w oaToolCall
		w.ID, w.Type, w.Function.Name = tc.ID, "function", tc.Name
		args, _ := json.Marshal(tc.Arguments)
		w.Function.Arguments = args
		o.ToolCalls = append(o.ToolCalls, w)
	}
	if m.Role == RoleAssistant && m.Content == "" && len(m.ToolCalls) > 0 {
		o.Content = nil
	}
	return o
}

// Chat sends req, retrying 429/5xx answers and lost connections with
// exponential backoff (honouring Retry-After) as long as nothing has
// streamed yet.
func (c *OpenAI) Chat(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return traced(ctx, "openai", req.Model, c.ep.display, func(ctx context.Context) (*Response, error) {
		return withRetries(ctx, &c.cfg, onDelta, func(ctx context.Context, onDelta func(Delta)) (*Response, error) {
			return c.ep.post(ctx, body, c.setHeaders, func(resp *http.Response) (*Response, error) {
				if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					return readStream(resp.Body, onDelta)
				}
				return readJSON(resp.Body, onDelta)
			})
		})
	})
}

func (c *OpenAI) setHeaders(h http.Header) {
	if c.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
}

func readJSON(r io.Reader, onDelta func(Delta)) (*Response, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, &transportError{fmt.Errorf("reading the answer: %w", err)}
	}
	var w oaResponse
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("the provider's answer is not JSON (%w): %.200s", err, b)
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return nil, fmt.Errorf("the provider reported an error: %s", errorMessage(b))
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("the provider's answer has no choices: %.200s", b)
	}
	ch := w.Choices[0]
	res := &Response{Model: w.Model, Usage: w.Usage}
	if ch.FinishReason != nil {
		res.FinishReason = *ch.FinishReason
	}
	if ch.Message.Content != nil {
		res.Text = *ch.Message.Content
	}
	res.Reasoning = reasoning(ch.Message)
	var acc toolAcc
	for i, tc := range ch.Message.ToolCalls {
		acc.add(tc, i)
	}
	res.ToolCalls = acc.calls()
	if onDelta != nil && (res.Text != "" || res.Reasoning != "") {
		onDelta(Delta{Text: res.Text, Reasoning: res.Reasoning})
	}
	return res, nil
}

func reasoning(m oaRespMessage) string {
	if m.ReasoningContent != nil {
		return *m.ReasoningContent
	}
	if m.Reasoning != nil {
		return *m.Reasoning
	}
	return ""
}

// toolAcc assembles tool calls from stream deltas: the first delta of a
// call carries its index, id and name, later ones pieces of its arguments.
type toolAcc struct {
	list  []*ToolCall
	args  []*strings.Builder
	index map[int]int // provider index → position in list
}

func (a *toolAcc) add(tc oaToolCall, pos int) {
	if a.index == nil {
		a.index = map[int]int{}
	}
	i := -1
	switch {
	case tc.Index != nil:
		if j, ok := a.index[*tc.Index]; ok {
			i = j
		}
	case tc.ID == "" && len(a.list) > 0:
		// No index (some servers): a delta without an id continues the
		// last call.
		i = len(a.list) - 1
	}
	if i < 0 || tc.ID != "" && a.list[i].ID != "" && tc.ID != a.list[i].ID {
		i = len(a.list)
		a.list = append(a.list, &ToolCall{})
		a.args = append(a.args, &strings.Builder{})
		key := pos
		if tc.Index != nil {
			key = *tc.Index
		}
		a.index[key] = i
	}
	c := a.list[i]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Function.Name != "" {
		c.Name += tc.Function.Name
	}
	if args := tc.Function.Arguments; len(args) > 0 && string(args) != "null" {
		var s string
		if json.Unmarshal(args, &s) == nil {
			a.args[i].WriteString(s)
		} else {
			a.args[i].Write(args) // an object, as some servers send
		}
	}
}

func (a *toolAcc) calls() []ToolCall {
	out := make([]ToolCall, 0, len(a.list))
	for i, c := range a.list {
		c.Arguments = a.args[i].String()
		if strings.TrimSpace(c.Arguments) == "" {
			c.Arguments = "{}"
		}
		if c.ID == "" {
			// Ollama and some others give no ids; results must still be
			// matched to calls.
			c.ID = "call_" + strconv.Itoa(i)
		}
		out = append(out, *c)
	}
	return out
}

// readStream reads an SSE answer: "data: {chunk}" events until
// "data: [DONE]" (or the end of the body).
func readStream(r io.Reader, onDelta func(Delta)) (*Response, error) {
	res := &Response{}
	var text, reason strings.Builder
	var acc toolAcc
	done := false
	err := readSSE(r, func(_ string, payload []byte) (bool, error) {
		if string(payload) == "[DONE]" {
			done = true
			return true, nil
		}
		var w oaResponse
		if err := json.Unmarshal(payload, &w); err != nil {
			return false, fmt.Errorf("a streamed chunk is not JSON (%w): %.200s", err, payload)
		}
		if len(w.Error) > 0 && string(w.Error) != "null" {
			return false, fmt.Errorf("the provider reported an error mid-stream: %s", errorMessage(payload))
		}
		if w.Model != "" {
			res.Model = w.Model
		}
		if w.Usage != nil {
			res.Usage = w.Usage
		}
		for _, ch := range w.Choices {
			d := Delta{Reasoning: reasoning(ch.Delta)}
			if ch.Delta.Content != nil {
				d.Text = *ch.Delta.Content
			}
			if d.Text != "" || d.Reasoning != "" {
				text.WriteString(d.Text)
				reason.WriteString(d.Reasoning)
				if onDelta != nil {
					onDelta(d)
				}
			}
			for i, tc := range ch.Delta.ToolCalls {
				acc.add(tc, i)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				res.FinishReason = *ch.FinishReason
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	res.Text, res.Reasoning, res.ToolCalls = text.String(), reason.String(), acc.calls()
	if !done && res.FinishReason == "" {
		return nil, &transportError{errors.New("the stream ended before the answer was complete (no finish_reason, no [DONE])")}
	}
	return res, nil
}
