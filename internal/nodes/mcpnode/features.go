package mcpnode

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// hookCap bounds a request the server makes of the person (sampling,
// elicitation), so that such a request never hangs the server.
const hookCap = 10 * time.Minute

func collect[T any](seq iter.Seq2[*T, error]) ([]*T, error) {
	var out []*T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// discover lists what the server offers (every page) and stores it. Only
// a failure to list tools is an error; a server that advertises resources
// or prompts and fails to list them keeps its tools usable.
func (n *Node) discover(ctx context.Context, c *conn, what uint32) error {
	caps := c.cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	if what&listTools != 0 {
		tools, err := n.listTools(ctx, c, caps.Tools != nil) // listing.go
		if err != nil {
			return err
		}
		index := make(map[string]*mcp.Tool, len(tools))
		for _, t := range tools {
			index[t.Name] = t
		}
		n.mu.Lock()
		n.tools, n.toolIndex = tools, index
		n.mu.Unlock()
	}
	if what&listResources != 0 {
		var res []*mcp.Resource
		var tmpl []*mcp.ResourceTemplate
		if caps.Resources != nil {
			var err error
			if res, err = collect(c.cs.Resources(ctx, nil)); err != nil {
				n.log.Warn("listing resources", zap.Error(err))
			}
			if tmpl, err = collect(c.cs.ResourceTemplates(ctx, nil)); err != nil {
				n.log.Warn("listing resource templates", zap.Error(err))
			}
		}
		n.mu.Lock()
		n.resources, n.templates = res, tmpl
		n.mu.Unlock()
	}
	if what&listPrompts != 0 {
		var prompts []*mcp.Prompt
		if caps.Prompts != nil {
			var err error
			if prompts, err = collect(c.cs.Prompts(ctx, nil)); err != nil {
				n.log.Warn("listing prompts", zap.Error(err))
			}
		}
		n.mu.Lock()
		n.prompts = prompts
		n.mu.Unlock()
	}
	return nil
}

// refresher re-lists what the server said changed (list_changed
// notifications) and tells the session. It ends with the connection.
func (n *Node) refresher(c *conn) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.refresh:
		}
		what := c.pending.Swap(0)
		ctx, cancel := context.WithTimeout(c.ctx, n.cfg.startTimeout)
		err := n.discover(ctx, c, what)
		cancel()
		if err != nil {
			n.log.Warn("refreshing after list_changed", zap.Error(err))
			continue
		}
		n.saveCatalog()
		if n.env.OnToolsChanged != nil {
			n.env.OnToolsChanged()
		}
	}
}

// session returns the live client session, or an error naming the state.
func (n *Node) session() (*mcp.ClientSession, error) {
	n.mu.RLock()
	c := n.conn
	n.mu.RUnlock()
	if c == nil {
		return nil, n.notReady()
	}
	return c.cs, nil
}

// Resources returns the server's resources (every page, as of the last
// listing). The slice must not be modified.
func (n *Node) Resources() []*mcp.Resource {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.resources
}

// ResourceTemplates returns the server's resource templates.
func (n *Node) ResourceTemplates() []*mcp.ResourceTemplate {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.templates
}

// Prompts returns the server's prompts.
func (n *Node) Prompts() []*mcp.Prompt {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.prompts
}

// ReadResource reads the resource at uri.
func (n *Node) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	cs, err := n.session()
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("reading %s from node %q: %w (list them with `nerve resources %s`)", uri, n.ID(), err, n.ID())
	}
	return res, nil
}

// GetPrompt renders the prompt name with args.
func (n *Node) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	cs, err := n.session()
	if err != nil {
		return nil, err
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("prompt %q of node %q: %w (list them with `nerve prompts %s`)", name, n.ID(), err, n.ID())
	}
	return res, nil
}

// Complete asks the server to complete a prompt or resource-template
// argument.
func (n *Node) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	cs, err := n.session()
	if err != nil {
		return nil, err
	}
	return cs.Complete(ctx, params)
}

// Subscribe asks the server for notifications when the resource at uri
// changes; they reach the function set with OnResourceUpdated.
func (n *Node) Subscribe(ctx context.Context, uri string) error {
	cs, err := n.session()
	if err != nil {
		return err
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	n.subs.Add(1)
	return nil
}

// Unsubscribe undoes Subscribe.
func (n *Node) Unsubscribe(ctx context.Context, uri string) error {
	cs, err := n.session()
	if err != nil {
		return err
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		return err
	}
	if n.subs.Add(-1) < 0 {
		n.subs.Store(0)
	}
	return nil
}

// OnResourceUpdated sets the function told about notifications/resources/updated.
func (n *Node) OnResourceUpdated(f func(uri string)) {
	n.mu.Lock()
	n.onUpdated = f
	n.mu.Unlock()
}

// SetLoggingLevel sets the lowest level of log messages the server sends
// ("debug", "info", "notice", "warning", "error", …).
func (n *Node) SetLoggingLevel(ctx context.Context, level string) error {
	cs, err := n.session()
	if err != nil {
		return err
	}
	return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
}

// Ping checks the server answers: a health check.
func (n *Node) Ping(ctx context.Context) error {
	cs, err := n.session()
	if err != nil {
		return err
	}
	return cs.Ping(ctx, nil)
}

// Instructions returns the server's instructions from initialize.
func (n *Node) Instructions() string {
	if r := n.initialize(); r != nil {
		return r.Instructions
	}
	return ""
}

// ServerCapabilities returns what the server said it supports.
func (n *Node) ServerCapabilities() *mcp.ServerCapabilities {
	if r := n.initialize(); r != nil {
		return r.Capabilities
	}
	return nil
}

// ServerInfo returns the server's name and version.
func (n *Node) ServerInfo() *mcp.Implementation {
	if r := n.initialize(); r != nil {
		return r.ServerInfo
	}
	return nil
}

// ProtocolVersion returns the protocol version agreed with the server.
func (n *Node) NegotiatedProtocolVersion() string {
	if r := n.initialize(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

func (n *Node) initialize() *mcp.InitializeResult {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.initResult
}

// StderrTail returns the last lines (at most 50) the current or last stdio
// server wrote to stderr.
func (n *Node) StderrTail() []string {
	n.mu.RLock()
	r := n.lastStderr
	n.mu.RUnlock()
	if r == nil {
		return nil
	}
	return r.Lines()
}

// hookCtx is ctx, ended too when the connection ends or after hookCap.
func hookCtx(ctx context.Context, c *conn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, hookCap)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (n *Node) sample(ctx context.Context, c *conn, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if n.env.Hooks == nil {
		n.log.Info("declined a sampling request from the server: no one to ask")
		return nil, fmt.Errorf("nerve declined the sampling request: no one is attached to answer it")
	}
	ctx, cancel := hookCtx(ctx, c)
	defer cancel()
	res, err := n.env.Hooks.Sample(ctx, n.ID(), p)
	if err != nil {
		n.log.Info("declined a sampling request from the server", zap.Error(err))
		return nil, err
	}
	return res, nil
}

func (n *Node) elicit(ctx context.Context, c *conn, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if n.env.Hooks == nil {
		n.log.Info("declined an elicitation request from the server: no one to ask")
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	ctx, cancel := hookCtx(ctx, c)
	defer cancel()
	res, err := n.env.Hooks.Elicit(ctx, n.ID(), p)
	if err != nil {
		n.log.Info("declined an elicitation request from the server", zap.Error(err))
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if res.Action != "accept" {
		n.log.Info("elicitation request not accepted", zap.String("action", res.Action))
	}
	return res, nil
}

var _ node.Node = (*Node)(nil)
