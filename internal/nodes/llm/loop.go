package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Step names of the EventStep events a chat call streams. Their Data is
// the JSON of toolCallData, toolResultData, usageData or contextData.
const (
	StepToolCall   = "tool_call"
	StepToolResult = "tool_result"
	StepUsage      = "usage"
	StepThinking   = "thinking"
	StepContext    = "context"
)

type toolCallData struct {
	Step      int             `json:"step"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`           // as the model wrote it
	Tool      string          `json:"tool,omitempty"` // qualified, when known
	Arguments json.RawMessage `json:"arguments"`
}

type toolResultData struct {
	Step    int    `json:"step"`
	ID      string `json:"id"`
	Tool    string `json:"tool,omitempty"`
	IsError bool   `json:"is_error"`
	Text    string `json:"text"`
}

type usageData struct {
	Step int `json:"step"`
	provider.Usage
	Model    string `json:"model,omitempty"`
	Finish   string `json:"finish_reason,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
}

// emitter serialises events from parallel tool calls to one observer.
type emitter struct {
	mu  sync.Mutex
	req *node.CallRequest
	// system is the system prompt of this turn's requests: the node's,
	// with its resources read at the turn's start (resources.go).
	system string
}

func (e *emitter) emit(ev node.CallEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.req.Emit(ev)
}

func (e *emitter) step(name string, data any) {
	if e.req.Observe == nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	e.emit(node.CallEvent{Kind: node.EventStep, Step: name, Data: b})
}

// CallTool runs chat: one user message, then model requests and the tool
// calls they ask for until the model answers without tools, MaxSteps is
// reached, or the chat is interrupted.
func (n *Node) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if req.Tool != ToolName {
		return nil, fmt.Errorf("%w %q: node %q has only %q", node.ErrUnknownTool, req.Tool, n.ID(), ToolName)
	}
	var args struct {
		Message *string `json:"message"`
	}
	if len(req.Arguments) > 0 {
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return nil, fmt.Errorf("%w: %v (want {\"message\": \"...\"})", node.ErrBadArgs, err)
		}
	}
	if args.Message == nil || strings.TrimSpace(*args.Message) == "" {
		return nil, fmt.Errorf("%w: message is required (e.g. {\"message\": \"hello\"})", node.ErrBadArgs)
	}
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	res, err := n.chat(ctx, req, *args.Message)
	n.EndCall(err != nil || res != nil && res.IsError)
	return res, err
}

func (n *Node) chat(ctx context.Context, req *node.CallRequest, message string) (*mcp.CallToolResult, error) {
	// One chat at a time: the conversation is a sequence.
	select {
	case n.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the chat in flight on node %q: %w", n.ID(), ctx.Err())
	}
	defer func() { <-n.turn }()
	n.interrupt.Store(false)

	// The resources are read before the message joins the conversation:
	// a turn that cannot have them is not taken.
	system, err := n.turnSystem(ctx)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	client, runCtx := n.client, n.runCtx
	if client == nil {
		n.mu.Unlock()
		return nil, fmt.Errorf("node %q is stopping: %w", n.ID(), node.ErrNotReady)
	}
	n.msgs = append(n.msgs, provider.Message{Role: provider.RoleUser, Content: message})
	n.mu.Unlock()

	// Stop cancels the chat too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWatch := context.AfterFunc(runCtx, cancel)
	defer stopWatch()

	em := &emitter{req: req, system: system}
	for step := 1; ; step++ {
		if step > n.opts.MaxSteps {
			return stopped(fmt.Sprintf("stopped after %d steps without a final answer (--max-steps %d); say \"continue\" to let it go on, or raise --max-steps", n.opts.MaxSteps, n.opts.MaxSteps)), nil
		}
		resp, err := n.step(ctx, client, em, step)
		if err != nil {
			if step == 1 {
				// Nothing happened: the call was not made, so the message
				// is not part of the conversation.
				n.mu.Lock()
				// Compare rather than cut at an index: fitting the
				// budget may have shortened the conversation.
				if k := len(n.msgs) - 1; k >= 0 && n.msgs[k].Role == provider.RoleUser && n.msgs[k].Content == message {
					n.msgs = n.msgs[:k]
					n.saveLocked()
				}
				n.mu.Unlock()
			}
			if runCtx.Err() != nil {
				return nil, fmt.Errorf("node %q was stopped during step %d: %w", n.ID(), step, err)
			}
			return nil, fmt.Errorf("step %d of the chat with %s: %w", step, n.opts.Model, err)
		}
		if len(resp.ToolCalls) == 0 {
			text := resp.Text
			if text == "" {
				text = "(the model gave an empty answer; finish reason: " + resp.FinishReason + ")"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chat on node %q cancelled after step %d: %w", n.ID(), step, ctx.Err())
		}
		if n.interrupt.Load() {
			return stopped(fmt.Sprintf("interrupted after step %d; the conversation is kept, say \"continue\" to go on", step)), nil
		}
	}
}

func stopped(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// step makes one model request and runs the tool calls it asks for. The
// conversation gains the answer and, for every tool call, a result (an
// error result when the call was cancelled), so it stays valid whatever
// happens.
func (n *Node) step(ctx context.Context, client provider.Client, em *emitter, step int) (*provider.Response, error) {
	tools := n.offered(ctx)
	msgs := n.fit(em, tools.bytes)
	preq := &provider.Request{
		Model:       n.opts.Model,
		System:      em.system,
		Messages:    msgs,
		Tools:       tools.tools,
		Temperature: n.opts.Temperature,
		MaxTokens:   n.opts.MaxTokens,
	}
	resp, err := client.Chat(ctx, preq, func(d provider.Delta) {
		if d.Text != "" {
			em.emit(node.CallEvent{Kind: node.EventText, Text: d.Text})
		}
		if d.Reasoning != "" {
			em.step(StepThinking, map[string]any{"step": step, "text": d.Reasoning})
		}
	})
	if err != nil {
		return nil, err
	}
	usage := usageData{Step: step, Model: resp.Model, Finish: resp.FinishReason, Attempts: resp.Attempts}
	if resp.Usage != nil {
		usage.Usage = *resp.Usage
	}
	em.step(StepUsage, usage)

	n.mu.Lock()
	n.lastUsage = resp.Usage
	n.msgs = append(n.msgs, provider.Message{Role: provider.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	n.saveLocked()
	n.mu.Unlock()
	if len(resp.ToolCalls) == 0 {
		return resp, nil
	}

	results := make([]provider.Message, len(resp.ToolCalls))
	var wg sync.WaitGroup
	for i, tc := range resp.ToolCalls {
		wg.Go(func() {
			text, isError := n.runTool(ctx, em, step, tc, tools)
			results[i] = provider.Message{Role: provider.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: text, IsError: isError}
		})
	}
	wg.Wait()
	n.mu.Lock()
	n.msgs = append(n.msgs, results...)
	n.saveLocked()
	n.mu.Unlock()
	return resp, nil
}

// runTool calls one tool the model asked for and returns the text the
// model reads: the result's LLM text (every content block described,
// "Error: " first for isError), or an error the model can act on; and
// whether the call failed.
func (n *Node) runTool(ctx context.Context, em *emitter, step int, tc provider.ToolCall, tools toolCache) (string, bool) {
	if tools.code && tc.Name == codemode.ToolName {
		return n.runScript(ctx, em, step, tc, tools)
	}
	byLLM := tools.byLLM
	e, known := byLLM[tc.Name]
	args := json.RawMessage(tc.Arguments)
	validJSON := json.Valid(args)
	if tools.discover && validJSON {
		switch tc.Name {
		case discoverSearch:
			em.step(StepToolCall, toolCallData{Step: step, ID: tc.ID, Name: tc.Name, Tool: tc.Name, Arguments: args})
			text, isError := tools.search(ctx, args)
			em.step(StepToolResult, toolResultData{Step: step, ID: tc.ID, Tool: tc.Name, IsError: isError, Text: text})
			return text, isError
		case discoverCall:
			var in struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(args, &in); err != nil || in.Name == "" {
				text := `Error: call_tool needs {"name": "node.tool", "arguments": {...}}; find names with search_tools`
				em.step(StepToolCall, toolCallData{Step: step, ID: tc.ID, Name: tc.Name, Tool: tc.Name, Arguments: args})
				em.step(StepToolResult, toolResultData{Step: step, ID: tc.ID, Tool: tc.Name, IsError: true, Text: text})
				return text, true
			}
			if len(in.Arguments) == 0 || string(in.Arguments) == "null" {
				in.Arguments = json.RawMessage(`{}`)
			}
			e, known = tools.byName[in.Name]
			args, validJSON = in.Arguments, json.Valid(in.Arguments)
			if !known {
				text := tools.unknown(ctx, in.Name)
				em.step(StepToolCall, toolCallData{Step: step, ID: tc.ID, Name: tc.Name, Tool: in.Name, Arguments: args})
				em.step(StepToolResult, toolResultData{Step: step, ID: tc.ID, Tool: in.Name, IsError: true, Text: text})
				return text, true
			}
		}
	}
	callData := toolCallData{Step: step, ID: tc.ID, Name: tc.Name, Tool: e.Qualified, Arguments: args}
	if !validJSON {
		b, _ := json.Marshal(tc.Arguments)
		callData.Arguments = b
	}
	em.step(StepToolCall, callData)

	text, isError := "", true
	switch {
	case !known && tools.discover:
		text = tools.unknown(ctx, tc.Name)
	case !known:
		names := make([]string, 0, len(byLLM))
		for name := range byLLM {
			names = append(names, name)
		}
		sort.Strings(names)
		if len(names) == 0 {
			text = fmt.Sprintf("Error: there is no tool %q; no tools are available", tc.Name)
		} else {
			text = fmt.Sprintf("Error: there is no tool %q; the tools are: %s", tc.Name, strings.Join(names, ", "))
		}
	case !validJSON:
		text = fmt.Sprintf("Error: the arguments of %s are not valid JSON: %s; call it again with a JSON object", tc.Name, tc.Arguments)
	default:
		observe := func(ev node.CallEvent) {
			// Progress and log messages of the tool reach the caller,
			// labelled with the tool; its streamed text would only
			// repeat what the result says.
			switch ev.Kind {
			case node.EventProgress, node.EventLog:
				if ev.Message != "" {
					ev.Message = e.Qualified + ": " + ev.Message
				}
				if ev.Logger == "" {
					ev.Logger = e.Qualified
				}
				em.emit(ev)
			}
		}
		// The call log names this node as the caller.
		cctx := node.WithCaller(ctx, node.Caller{Kind: node.CallerLLM, Name: n.ID()})
		res, err := n.env.Tools.CallTool(cctx, e.Qualified, args, observe)
		switch {
		case err != nil && ctx.Err() != nil:
			text = "Error: the call was cancelled before it finished"
		case err != nil:
			text = "Error: " + err.Error()
		default:
			text, isError = node.ResultText(res, n.maxResultBytes()), res != nil && res.IsError
		}
	}
	em.step(StepToolResult, toolResultData{Step: step, ID: tc.ID, Tool: e.Qualified, IsError: isError, Text: text})
	return text, isError
}

// maxResultBytes keeps one tool result under a quarter of the budget.
func (n *Node) maxResultBytes() int {
	return min(node.DefaultResultBytes, n.opts.ContextTokens*bytesPerToken/4)
}

var errNoClient = errors.New("node is not started")
