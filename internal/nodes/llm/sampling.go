package llm

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Sample answers an MCP server's sampling/createMessage request with the
// node's model. The request's messages are sent alone — not the node's
// conversation, which it does not change — with no tools, the request's
// system prompt (or the node's), max tokens, temperature and stop
// sequences. The session asks the person before calling it.
func (n *Node) Sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if p == nil || len(p.Messages) == 0 {
		return nil, fmt.Errorf("%w: a sampling request needs at least one message", node.ErrBadArgs)
	}
	if err := n.BeginCall(); err != nil {
		return nil, err
	}
	res, err := n.sample(ctx, p)
	n.EndCall(err != nil)
	return res, err
}

func (n *Node) sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	n.mu.Lock()
	client, runCtx := n.client, n.runCtx
	n.mu.Unlock()
	if client == nil {
		return nil, fmt.Errorf("node %q: %w", n.ID(), errNoClient)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(runCtx, cancel)()

	req := &provider.Request{
		Model:       n.opts.Model,
		System:      n.opts.System,
		Temperature: n.opts.Temperature,
		MaxTokens:   n.opts.MaxTokens,
		Stop:        p.StopSequences,
	}
	if p.SystemPrompt != "" {
		req.System = p.SystemPrompt
	}
	if p.MaxTokens > 0 {
		req.MaxTokens = int(p.MaxTokens)
	}
	if p.Temperature != 0 {
		t := p.Temperature
		req.Temperature = &t
	}
	for i, m := range p.Messages {
		if m == nil {
			continue
		}
		msg := provider.Message{Role: string(m.Role)}
		if msg.Role != provider.RoleUser && msg.Role != provider.RoleAssistant {
			return nil, fmt.Errorf("%w: message %d has role %q (want user or assistant)", node.ErrBadArgs, i, m.Role)
		}
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			msg.Content = c.Text
		case *mcp.ImageContent:
			if msg.Role == provider.RoleUser {
				msg.Images = []provider.Image{{MIMEType: c.MIMEType, Data: c.Data}}
			} else {
				msg.Content = fmt.Sprintf("[%s image]", c.MIMEType)
			}
		case *mcp.AudioContent:
			// Chat Completions takes audio only on some models, the
			// Messages API not at all; describe it.
			msg.Content = fmt.Sprintf("[%s audio, %s]", c.MIMEType, node.HumanBytes(int64(len(c.Data))))
		default:
			return nil, fmt.Errorf("%w: message %d has content nerve cannot send to a model (%T)", node.ErrBadArgs, i, m.Content)
		}
		req.Messages = append(req.Messages, msg)
	}
	resp, err := client.Chat(ctx, req, nil)
	if err != nil {
		return nil, fmt.Errorf("sampling with %s on node %q: %w", n.opts.Model, n.ID(), err)
	}
	model := resp.Model
	if model == "" {
		model = n.opts.Model
	}
	return &mcp.CreateMessageResult{
		Content:    &mcp.TextContent{Text: resp.Text},
		Model:      model,
		Role:       "assistant",
		StopReason: stopReason(resp.FinishReason),
	}, nil
}

// stopReason maps OpenAI finish reasons and Anthropic stop reasons to
// MCP's.
func stopReason(finish string) string {
	switch finish {
	case "stop", "end_turn", "":
		return "endTurn"
	case "length", "max_tokens":
		return "maxTokens"
	case "tool_calls", "function_call", "tool_use":
		return "toolUse"
	case "stop_sequence":
		return "stopSequence"
	}
	return finish
}
