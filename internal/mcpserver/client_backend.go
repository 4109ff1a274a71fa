package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// ClientBackend is a Backend on a session of a daemon, reached through
// the local API, for a server outside the daemon (`nerve mcp serve` was
// one until the daemon served stdio connections itself). It is an
// Attacher through the daemon's attach stream.
type ClientBackend struct {
	s *client.Session
}

// NewClientBackend returns a Backend on s.
func NewClientBackend(s *client.Session) *ClientBackend { return &ClientBackend{s: s} }

// mcpErr turns the daemon's "not an MCP node" into ErrNoFeatures.
func mcpErr(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code == api.CodeNotMCP {
		return fmt.Errorf("%w: %s", ErrNoFeatures, ce.Message)
	}
	return err
}

func (b *ClientBackend) Toolset(ctx context.Context) ([]ToolEntry, error) {
	tools, err := b.s.Toolset(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ToolEntry, 0, len(tools))
	for _, t := range tools {
		if t.Tool != nil {
			out = append(out, ToolEntry{Node: t.Node, Qualified: t.Qualified, LLMName: t.LLMName, Tool: t.Tool})
		}
	}
	return out, nil
}

func (b *ClientBackend) Tools(ctx context.Context, nodeID string) ([]*mcp.Tool, error) {
	return b.s.Tools(ctx, nodeID)
}

func (b *ClientBackend) Nodes(ctx context.Context) ([]node.Info, error) { return b.s.Nodes(ctx) }

func (b *ClientBackend) Restart(ctx context.Context, nodeID string) (node.Info, error) {
	return b.s.Restart(ctx, nodeID)
}

func (b *ClientBackend) Expose(ctx context.Context) (string, error) {
	st, err := b.s.Settings(ctx)
	if err != nil {
		return "", err
	}
	return st.Expose, nil
}

func (b *ClientBackend) Call(ctx context.Context, nodeID, tool string, args json.RawMessage, meta map[string]any, observe func(node.CallEvent)) (*mcp.CallToolResult, error) {
	return b.s.CallMeta(ctx, nodeID, tool, args, meta, func(l api.CallLine) {
		if l.Kind != api.LineState && observe != nil {
			observe(l.CallEvent)
		}
	})
}

func (b *ClientBackend) Watch(ctx context.Context) (Watch, error) { return b.s.Subscribe(ctx) }

func (b *ClientBackend) Features(ctx context.Context, nodeID string) (*Features, error) {
	f, err := b.s.MCPFeatures(ctx, nodeID)
	if err != nil {
		return nil, mcpErr(err)
	}
	out := Features(f)
	return &out, nil
}

func (b *ClientBackend) ReadResource(ctx context.Context, nodeID, uri string) (*mcp.ReadResourceResult, error) {
	var res mcp.ReadResourceResult
	if err := b.s.MCP(ctx, nodeID, api.MCPReadResource, &mcp.ReadResourceParams{URI: uri}, &res); err != nil {
		return nil, mcpErr(err)
	}
	return &res, nil
}

func (b *ClientBackend) GetPrompt(ctx context.Context, nodeID, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res mcp.GetPromptResult
	if err := b.s.MCP(ctx, nodeID, api.MCPGetPrompt, &mcp.GetPromptParams{Name: name, Arguments: args}, &res); err != nil {
		return nil, mcpErr(err)
	}
	return &res, nil
}

func (b *ClientBackend) Complete(ctx context.Context, nodeID string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var res mcp.CompleteResult
	if err := b.s.MCP(ctx, nodeID, api.MCPComplete, params, &res); err != nil {
		return nil, mcpErr(err)
	}
	return &res, nil
}

func (b *ClientBackend) Subscribe(ctx context.Context, nodeID, uri string) error {
	return mcpErr(b.s.MCP(ctx, nodeID, api.MCPSubscribe, &mcp.SubscribeParams{URI: uri}, nil))
}

func (b *ClientBackend) Unsubscribe(ctx context.Context, nodeID, uri string) error {
	return mcpErr(b.s.MCP(ctx, nodeID, api.MCPUnsubscribe, &mcp.UnsubscribeParams{URI: uri}, nil))
}

func (b *ClientBackend) SetLoggingLevel(ctx context.Context, nodeID, level string) error {
	return mcpErr(b.s.MCP(ctx, nodeID, api.MCPSetLevel, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}, nil))
}

// Attach reads the daemon's attach stream until ctx ends, answering each
// request through a.
func (b *ClientBackend) Attach(ctx context.Context, nodeID string, a Attachment) error {
	att, err := b.s.Attach(ctx, nodeID)
	if err != nil {
		return err
	}
	return serveAttachment(ctx, att, nodeID, a)
}

// AttachFor implements CallAttacher: the daemon has the attachment once
// its stream answered.
func (b *ClientBackend) AttachFor(ctx context.Context, nodeID string, a Attachment) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	att, err := b.s.Attach(ctx, nodeID)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serveAttachment(ctx, att, nodeID, a)
	}()
	return func() { cancel(); <-done }, nil
}

// serveAttachment passes what att asks to a until ctx ends.
func serveAttachment(ctx context.Context, att *client.Attachment, nodeID string, a Attachment) error {
	stop := context.AfterFunc(ctx, func() { att.Close() })
	defer stop()
	defer att.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	// pending cancels the requests being asked of the client, by id: a
	// withdrawn one is cancelled so the client hears notifications/cancelled
	// instead of keeping a form open that nobody waits for.
	var mu sync.Mutex
	pending := map[string]context.CancelFunc{}
	for {
		line, err := att.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch line.Kind {
		case api.AttachResourceUpdated:
			a.ResourceUpdated(line.URI)
		case api.AttachSample, api.AttachElicit:
			rctx, cancel := context.WithCancel(ctx)
			mu.Lock()
			pending[line.ID] = cancel
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(pending, line.ID)
					mu.Unlock()
					cancel()
				}()
				answer(rctx, att, nodeID, a, line)
			})
		case api.AttachWithdrawn:
			mu.Lock()
			if cancel, ok := pending[line.ID]; ok {
				cancel()
			}
			mu.Unlock()
		}
	}
}

// answer asks the MCP client what line asks and posts the answer back.
func answer(ctx context.Context, att *client.Attachment, nodeID string, a Attachment, line api.AttachLine) {
	var res any
	var err error
	switch line.Kind {
	case api.AttachSample:
		var p mcp.CreateMessageParams
		if err = json.Unmarshal(line.Params, &p); err == nil {
			res, err = a.Sample(ctx, nodeID, &p)
		}
	case api.AttachElicit:
		var p mcp.ElicitParams
		if err = json.Unmarshal(line.Params, &p); err == nil {
			res, err = a.Elicit(ctx, nodeID, &p)
		}
	}
	if ctx.Err() != nil {
		return // withdrawn, or the attachment ended: nobody waits for it
	}
	_ = att.Answer(context.WithoutCancel(ctx), line.ID, res, err)
}

var (
	_ Backend  = (*ClientBackend)(nil)
	_ Attacher = (*ClientBackend)(nil)
)
