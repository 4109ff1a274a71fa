package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OpenAI is a client of the OpenAI-compatible Chat Completions API.
type OpenAI struct {
	cfg     Config
	url     string
	display string // url without its query, for messages
}

// NewOpenAI returns a client for cfg.
func NewOpenAI(cfg Config) *OpenAI {
	c := cfg.withDefaults()
	endpoint, display := c.BaseURL, c.BaseURL
	if u, err := url.Parse(c.BaseURL); err == nil {
		if !strings.HasSuffix(u.Path, "/chat/completions") {
			u.Path = strings.TrimRight(u.Path, "/") + "/chat/completions"
		}
		endpoint = u.String()
		if u.RawQuery != "" {
			u.RawQuery = "…"
		}
		u.User = nil
		display = u.String()
	}
	return &OpenAI{cfg: c, url: endpoint, display: display}
}

// URL returns the endpoint requests are sent to.
func (c *OpenAI) URL() string { return c.url }

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
	for attempt := 0; ; attempt++ {
		streamed := false
		res, err := c.once(ctx, body, func(d Delta) {
			streamed = true
			if onDelta != nil {
				onDelta(d)
			}
		})
		if err == nil {
			res.Attempts = attempt + 1
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		wait, ok := c.retryDelay(err, attempt)
		if !ok || streamed || attempt >= c.cfg.MaxRetries {
			if attempt > 0 {
				return nil, fmt.Errorf("after %d attempts: %w", attempt+1, err)
			}
			return nil, err
		}
		if serr := c.cfg.Sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%w (stopped waiting to retry: %w)", err, serr)
		}
	}
}

// retryDelay says whether err is worth another attempt and after how long.
func (c *OpenAI) retryDelay(err error, attempt int) (time.Duration, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		if !retryableStatus(se.Status) {
			return 0, false
		}
		switch {
		case se.RetryAfter < 0: // "Retry-After: 0": now
			return 0, true
		case se.RetryAfter > maxRetryAfter:
			return 0, false
		case se.RetryAfter > 0:
			return se.RetryAfter, true
		}
	} else if !isTransient(err) {
		return 0, false
	}
	d := baseBackoff << attempt
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	// ±25% jitter so clients that failed together do not retry together.
	d = d*3/4 + time.Duration(rand.Int64N(int64(d/2)+1))
	return d, true
}

// isTransient reports errors of the connection (refused, reset, EOF, a
// per-request timeout) as opposed to answers.
func isTransient(err error) bool {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	var te *transportError
	return errors.As(err, &te)
}

type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

func (c *OpenAI) once(ctx context.Context, body []byte, onDelta func(Delta)) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request to %s: %w (check --base-url)", c.display, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.cfg.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	for k, v := range c.cfg.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := c.cfg.HTTPClient.Do(hreq)
	if err != nil {
		// *url.Error repeats the full URL, which may carry a key in its
		// query (Gemini's ?key=); say which endpoint with c.display.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("no answer from %s within %v (raise --timeout): %w", c.display, c.cfg.Timeout, err)
		}
		return nil, &transportError{fmt.Errorf("sending the request to %s: %w (is the server running?)", c.display, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Status: resp.StatusCode, Message: errorMessage(b), URL: c.display, RetryAfter: retryAfter(resp.Header)}
	}
	ct := resp.Header.Get("Content-Type")
	var res *Response
	if strings.HasPrefix(ct, "text/event-stream") {
		res, err = readStream(resp.Body, onDelta)
	} else {
		res, err = readJSON(resp.Body, onDelta)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("the answer from %s took over %v (raise --timeout): %w", c.display, c.cfg.Timeout, err)
		}
		return nil, err
	}
	return res, nil
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date). "0" comes back as a negative duration meaning "retry now".
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			if ms == 0 {
				return -1
			}
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		if secs == 0 {
			return -1
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
		return -1
	}
	return 0
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
// "data: [DONE]" (or the end of the body), ignoring comments and other
// fields.
func readStream(r io.Reader, onDelta func(Delta)) (*Response, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	res := &Response{}
	var text, reason strings.Builder
	var acc toolAcc
	var data bytes.Buffer
	done := false
	dispatch := func() error {
		defer data.Reset()
		payload := bytes.TrimSpace(data.Bytes())
		if len(payload) == 0 {
			return nil
		}
		if string(payload) == "[DONE]" {
			done = true
			return nil
		}
		var w oaResponse
		if err := json.Unmarshal(payload, &w); err != nil {
			return fmt.Errorf("a streamed chunk is not JSON (%w): %.200s", err, payload)
		}
		if len(w.Error) > 0 && string(w.Error) != "null" {
			return fmt.Errorf("the provider reported an error mid-stream: %s", errorMessage(payload))
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
		return nil
	}
	for !done {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if derr := dispatch(); derr != nil {
					return nil, derr
				}
			case bytes.HasPrefix(line, []byte("data:")):
				v := bytes.TrimPrefix(line[5:], []byte(" "))
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(v)
			}
		}
		if err != nil {
			if derr := dispatch(); derr != nil {
				return nil, derr
			}
			if err == io.EOF {
				break
			}
			return nil, &transportError{fmt.Errorf("reading the stream: %w", err)}
		}
	}
	res.Text, res.Reasoning, res.ToolCalls = text.String(), reason.String(), acc.calls()
	if !done && res.FinishReason == "" {
		return nil, &transportError{errors.New("the stream ended before the answer was complete (no finish_reason, no [DONE])")}
	}
	return res, nil
}
