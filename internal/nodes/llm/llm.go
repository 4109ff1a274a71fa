// Package llm is the llm node kind: a stateful conversation with a model
// behind an OpenAI-compatible Chat Completions API or the Anthropic
// Messages API (Options.Provider), offered as one tool,
// chat {message}. The model may call the tools of the session's other nodes
// (chosen with Options.Tools); the node runs those calls, feeds the results
// back and repeats until the model answers or MaxSteps is reached, streaming
// every step to the caller. The conversation is saved with the node's spec,
// so a restarted daemon continues it.
//
// The session imports it only through the factory registry (internal/nodes/all).
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind name.
const Kind = "llm"

// ToolName is the node's one tool.
const ToolName = "chat"

// Values of Options.Provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Defaults of Options.
const (
	DefaultMaxSteps      = 20
	DefaultContextTokens = 100_000
	DefaultTimeout       = provider.DefaultTimeout
)

// Options are the llm kind's settings, saved in Spec.Options. The command
// line `nerve node add llm NAME --base-url URL --model M [--api-key
// '${VAR}'] [--tools LIST] [--system TEXT] [--max-steps N] ...` fills one
// flag per field (--base-url → base_url).
type Options struct {
	// BaseURL is the API root. For "openai", "/chat/completions" is added
	// to it: https://api.openai.com/v1, https://openrouter.ai/api/v1,
	// http://127.0.0.1:8080/v1 (llama.cpp), http://127.0.0.1:11434/v1
	// (Ollama). For "anthropic", "/v1/messages" is added:
	// https://api.anthropic.com. Required.
	BaseURL string `json:"base_url"`
	// Model is the model name the provider knows. Required.
	Model string `json:"model"`
	// APIKey is sent as "Authorization: Bearer KEY" ("x-api-key: KEY"
	// for "anthropic"). Write it as a reference, '${OPENAI_API_KEY}' or
	// '${ANTHROPIC_API_KEY}' (or ${VAR:-default}): it is saved
	// unexpanded and expanded from the daemon's environment at each Start;
	// an unset variable is an error naming it. Empty: no Authorization
	// header (local servers). Never logged, never shown in Info.
	APIKey string `json:"api_key,omitempty"`
	// Headers are extra HTTP headers (OpenRouter's HTTP-Referer, Azure's
	// api-key, …); values may hold ${VAR} references like APIKey.
	Headers map[string]string `json:"headers,omitempty"`
	// Tools chooses the session tools the model may call, each entry one of:
	// a node id ("fs": every tool of node fs), a glob over qualified names
	// ("fs.read_*", "gh.*"), a glob over node ids ("web-*"), or "*" for every
	// tool of every other node. Resolved again at every step, so nodes added
	// or restarted later are seen. Empty: the model gets no tools. The node
	// never offers its own chat tool to itself. The CLI's --tools fs,bash is
	// split at commas (see ParseTools).
	Tools []string `json:"tools,omitempty"`
	// Discover offers the model two tools instead of every tool Tools
	// chooses: search_tools (find tools by what they do, BM25 over their
	// names, descriptions and parameters) and call_tool (call one by
	// name). For sessions with more tools than a request should carry
	// (issue 19).
	Discover bool `json:"discover,omitempty"`
	// Code offers the model run_script instead of the tools Tools
	// chooses (beside search_tools and call_tool with Discover): one
	// Starlark script that calls them as functions, run by nerve, so the
	// intermediate results never pass through the model (issue 30,
	// docs/code-mode.md). The script sees exactly the tools the model
	// may call.
	Code bool `json:"code,omitempty"`
	// System is the system prompt sent before the conversation.
	System string `json:"system,omitempty"`
	// MaxSteps bounds the model requests of one chat call (default 20).
	MaxSteps int `json:"max_steps,omitempty"`
	// Temperature is sent when set.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens bounds each answer (max_tokens) when set. The Messages
	// API requires it: "anthropic" sends 4096 when it is not set.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Timeout bounds one HTTP request to the provider, streaming included
	// ("90s"; default 5m). 429 and 5xx answers are retried with backoff.
	Timeout node.Duration `json:"timeout,omitempty"`
	// Retry tunes those retries (attempts, base, max); nil keeps
	// provider.DefaultRetry.
	Retry *mcpconf.Retry `json:"retry,omitempty"`
	// Stream asks for SSE streaming (default true); false for servers that
	// stream badly.
	Stream *bool `json:"stream,omitempty"`
	// Provider is the API dialect: "openai" (the default; every
	// OpenAI-compatible server) or "anthropic" (the Anthropic Messages
	// API). The saved conversation is the same for both, so a node may
	// change provider and keep it.
	Provider string `json:"provider,omitempty"`
	// ContextTokens is the conversation's token budget (default 100000,
	// estimated at 4 bytes a token). Over it, the oldest tool results are
	// replaced by a notice first, then the oldest exchanges are dropped;
	// the conversation says so. Lower it for small local models.
	ContextTokens int `json:"context_tokens,omitempty"`
	// Resources are resources of the session's nodes whose text goes into
	// the model's context, each "NODE:URI" (--resource fs:file:///x/README.md):
	// read at the start of every chat call and put in that turn's system
	// prompt; at most MaxResourceBytes together (resources.go).
	Resources []string `json:"resources,omitempty"`
}

// ParseTools splits a --tools flag value ("fs,bash.*") into entries.
func ParseTools(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validate checks o and fills defaults.
func (o *Options) validate() error {
	if o.BaseURL == "" {
		return errors.New("--base-url is required (e.g. http://127.0.0.1:8080/v1 or https://api.openai.com/v1)")
	}
	if !strings.Contains(o.BaseURL, "${") {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--base-url %q is not an http(s) URL (e.g. http://127.0.0.1:8080/v1)", o.BaseURL)
		}
	}
	if o.Model == "" {
		return errors.New("--model is required (e.g. gpt-4o-mini, or the name your local server serves)")
	}
	switch o.Provider {
	case "", ProviderOpenAI:
		o.Provider = ProviderOpenAI
	case ProviderAnthropic:
	default:
		return fmt.Errorf("--provider %q is not supported (use %q for any OpenAI-compatible server, %q for the Anthropic Messages API)", o.Provider, ProviderOpenAI, ProviderAnthropic)
	}
	if o.MaxSteps < 0 {
		return fmt.Errorf("--max-steps %d must be positive", o.MaxSteps)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.ContextTokens < 0 {
		return fmt.Errorf("--context-tokens %d must be positive", o.ContextTokens)
	}
	if o.ContextTokens == 0 {
		o.ContextTokens = DefaultContextTokens
	}
	if o.MaxTokens < 0 {
		return fmt.Errorf("--max-tokens %d must be positive", o.MaxTokens)
	}
	if o.Discover && len(o.Tools) == 0 {
		return errors.New("--discover finds tools among those --tools chooses, and none are chosen: add --tools '*' (or node ids, globs)")
	}
	if o.Code && len(o.Tools) == 0 {
		return errors.New("--code lets the model's scripts call the tools --tools chooses, and none are chosen: add --tools '*' (or node ids, globs)")
	}
	for _, p := range o.Tools {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("--tools entry %q is not a valid glob: %w", p, err)
		}
	}
	return o.Retry.Check()
}

func (o *Options) stream() bool { return o.Stream == nil || *o.Stream }

var chatTool = &mcp.Tool{
	Name:  ToolName,
	Title: "Chat with the model",
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"message": map[string]any{"type": "string", "description": "what to say to the model"},
		},
		"required":             []any{"message"},
		"additionalProperties": false,
	},
}

// Node is an llm node.
type Node struct {
	node.Base
	env  node.Env
	opts Options // validated; APIKey and Headers unexpanded
	tool *mcp.Tool
	// resources are opts.Resources read (resources.go).
	resources []resourceRef

	// turn is held by the chat call in flight (one at a time, in order).
	turn chan struct{}
	// interrupt is set by Interrupt and read after each step.
	interrupt atomic.Bool

	// mu guards the fields below.
	mu        sync.Mutex
	client    provider.Client
	msgs      []provider.Message
	runCtx    context.Context // cancelled by Stop
	runCancel context.CancelFunc
	lastUsage *provider.Usage
	toolCache toolCache
	stateErr  string // why a saved conversation could not be read
}

// New is the llm kind's node.Factory.
func New(spec node.Spec, env node.Env) (node.Node, error) {
	if len(spec.Command) > 0 {
		return nil, fmt.Errorf("llm node takes no command (got %q); give --base-url and --model instead", spec.Command)
	}
	var opts Options
	if err := spec.DecodeOptions(&opts); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	refs, err := parseResources(opts.Resources, spec.ID)
	if err != nil {
		return nil, fmt.Errorf("llm node %q: %w", spec.ID, err)
	}
	n := &Node{env: env, opts: opts, resources: refs, turn: make(chan struct{}, 1)}
	t := *chatTool
	t.Description = fmt.Sprintf("Send a message to the model %s and get its answer. The conversation continues across calls.", opts.Model)
	if len(opts.Tools) > 0 {
		t.Description += fmt.Sprintf(" The model may call tools of the session (%s) before answering, up to %d steps.", strings.Join(opts.Tools, ", "), opts.MaxSteps)
	}
	n.tool = &t
	if msgs, err := decodeState(spec.State); err != nil {
		// A conversation that cannot be read must not keep the node
		// from starting; it is reported and replaced by a new one.
		n.stateErr = err.Error()
		env.Log().Warn("saved conversation unreadable; starting a new one", zap.Error(err))
	} else {
		n.msgs = msgs
	}
	n.Init(spec, env)
	return n, nil
}

// savedState is the JSON kept in Spec.State.
type savedState struct {
	Version  int                `json:"version"`
	Messages []provider.Message `json:"messages"`
}

func decodeState(raw json.RawMessage) ([]provider.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s savedState
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("reading the saved conversation: %w", err)
	}
	if s.Version != 1 {
		return nil, fmt.Errorf("saved conversation has version %d; this nerve reads version 1", s.Version)
	}
	return s.Messages, nil
}

// saveLocked persists the conversation. n.mu must be held.
func (n *Node) saveLocked() {
	syncs.AssertLocked(&n.mu)
	if n.env.SaveState == nil {
		return
	}
	var raw json.RawMessage
	if len(n.msgs) > 0 {
		b, err := json.Marshal(savedState{Version: 1, Messages: n.msgs})
		if err != nil {
			n.env.Log().Error("encoding the conversation", zap.Error(err))
			return
		}
		raw = b
	}
	if err := n.env.SaveState(raw); err != nil {
		n.env.Log().Error("saving the conversation", zap.Error(err))
	}
}

// expand resolves a ${VAR} reference from the node's environment.
func (n *Node) expand(what, s string) (string, error) {
	v, err := mcpconf.Expand(s, n.env.Lookup)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, mcpconf.Explain(err, n.env.VarsWhere()))
	}
	return v, nil
}

// Start expands the API key and headers and makes the node READY. It does
// not contact the provider: a local server may come up later, and the
// first chat says clearly what is wrong.
func (n *Node) Start(ctx context.Context) error {
	if err := n.Machine.ToIf(node.Starting, "", node.Created, node.Stopped); err != nil {
		return err
	}
	client, err := n.newClient()
	if err != nil {
		_ = n.Machine.To(node.Error, err.Error())
		return err
	}
	n.mu.Lock()
	n.client = client
	n.runCtx, n.runCancel = context.WithCancel(context.Background())
	n.mu.Unlock()
	n.interrupt.Store(false)
	return n.Machine.To(node.Ready, "")
}

func (n *Node) newClient() (provider.Client, error) {
	key, err := n.expand("--api-key", n.opts.APIKey)
	if err != nil {
		return nil, err
	}
	base, err := n.expand("--base-url", n.opts.BaseURL)
	if err != nil {
		return nil, err
	}
	headers := make(map[string]string, len(n.opts.Headers))
	for k, v := range n.opts.Headers {
		if headers[k], err = n.expand("header "+k, v); err != nil {
			return nil, err
		}
	}
	cfg := provider.Config{
		BaseURL: base,
		APIKey:  key,
		Headers: headers,
		Stream:  n.opts.stream(),
		Timeout: time.Duration(n.opts.Timeout),
		Retry:   n.opts.Retry.Over(provider.DefaultRetry),
	}
	if n.opts.Provider == ProviderAnthropic {
		return provider.NewAnthropic(cfg), nil
	}
	return provider.NewOpenAI(cfg), nil
}

// Stop cancels a chat in flight, waits for it to end and drops the client
// (and with it the expanded key).
func (n *Node) Stop(ctx context.Context) error {
	switch n.State() {
	case node.Created, node.Stopped:
		return nil
	}
	if err := n.Machine.To(node.Stopping, ""); err != nil {
		return err
	}
	n.mu.Lock()
	if n.runCancel != nil {
		n.runCancel()
	}
	n.mu.Unlock()
	// Wait for the chat in flight, which ends promptly once cancelled.
	select {
	case n.turn <- struct{}{}:
		<-n.turn
	case <-ctx.Done():
	}
	n.mu.Lock()
	n.client = nil
	n.mu.Unlock()
	return n.Machine.To(node.Stopped, "")
}

// Interrupt makes the chat in flight stop after its current step (the
// model's answer and the tool calls it asked for), leaving the
// conversation consistent. Without a chat in flight it does nothing.
func (n *Node) Interrupt(ctx context.Context) error {
	if n.InFlight() > 0 {
		n.interrupt.Store(true)
	}
	return nil
}

// Reset clears the conversation (`:node reset NAME`). It waits for a chat
// in flight to end, or for ctx.
func (n *Node) Reset(ctx context.Context) error {
	select {
	case n.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("resetting node %q: waiting for the chat in flight: %w (interrupt it first)", n.ID(), ctx.Err())
	}
	defer func() { <-n.turn }()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = nil
	n.stateErr = ""
	n.saveLocked()
	return nil
}

// Messages returns a copy of the conversation.
func (n *Node) Messages() []provider.Message {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]provider.Message(nil), n.msgs...)
}

func (n *Node) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{n.tool}, nil
}

// Info describes the node. The API key and header values never appear.
func (n *Node) Info() node.Info {
	info := n.BaseInfo()
	info.Tools = 1
	info.Summary = fmt.Sprintf("model %s at %s", n.opts.Model, n.opts.BaseURL)
	n.mu.Lock()
	defer n.mu.Unlock()
	d := map[string]any{
		"model":          n.opts.Model,
		"base_url":       n.opts.BaseURL,
		"provider":       n.opts.Provider,
		"messages":       len(n.msgs),
		"max_steps":      n.opts.MaxSteps,
		"stream":         n.opts.stream(),
		"context_tokens": n.opts.ContextTokens,
	}
	if len(n.opts.Tools) > 0 {
		d["tools"] = n.opts.Tools
	}
	if n.opts.Code {
		d["code"] = true
	}
	if len(n.opts.Resources) > 0 {
		d["resources"] = n.opts.Resources
	}
	if len(n.opts.Headers) > 0 {
		names := make([]string, 0, len(n.opts.Headers))
		for k := range n.opts.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		d["headers"] = names
	}
	if n.opts.APIKey != "" {
		d["api_key"] = "set"
	}
	if n.lastUsage != nil {
		d["last_prompt_tokens"] = n.lastUsage.PromptTokens
	}
	if n.stateErr != "" {
		d["state_error"] = n.stateErr
	}
	info.Details = d
	return info
}
