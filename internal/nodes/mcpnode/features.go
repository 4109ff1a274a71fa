package mcpnode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// hookCap bounds a request the server makes of the person (sampling,
// elicitation), so that such a request never hangs the server.
const hookCap = 10 * time.Minute

// listCache is what a server of 2026-07-28 said of how long a list may be
// kept (SEP-2549): ttlMs and cacheScope of its pages (the shortest ttl;
// private if any page is), and when nerve fetched it.
type listCache struct {
	TTLMs   int       `json:"ttl_ms"`
	Scope   string    `json:"scope,omitempty"`
	Fetched time.Time `json:"fetched"`
}

// stale reports whether the list has outlived the ttl its server gave. A
// ttl of 0 is no guidance (servers before 2026-07-28 send none, and the
// SDK cannot tell an absent ttl from 0): such a list is re-read when the
// server says it changed, as before.
func (lc listCache) stale(now time.Time) bool {
	return lc.TTLMs > 0 && now.Sub(lc.Fetched) >= time.Duration(lc.TTLMs)*time.Millisecond
}

// cacheInfoLocked says, for node info, what the server said of keeping
// its lists: "ttl 5m0s, private (stale)". n.mu is held.
func (n *Node) cacheInfoLocked() map[string]string {
	syncs.AssertRLocked(&n.mu)
	out := map[string]string{}
	now := time.Now()
	for k, lc := range n.caches {
		if lc.TTLMs <= 0 && lc.Scope != "private" {
			continue
		}
		var parts []string
		if lc.TTLMs > 0 {
			parts = append(parts, "ttl "+(time.Duration(lc.TTLMs)*time.Millisecond).String())
		}
		if lc.Scope != "" {
			parts = append(parts, lc.Scope)
		}
		v := strings.Join(parts, ", ")
		if lc.stale(now) {
			v += " (stale)"
		}
		out[k] = v
	}
	return out
}

// listAll reads every page of a list, and what its pages said of caching.
func listAll[T any, R mcp.CacheableResult](ctx context.Context, list func(context.Context, string) (R, error), items func(R) ([]*T, string)) ([]*T, listCache, error) {
	var out []*T
	lc := listCache{Fetched: time.Now()}
	cursor := ""
	for first := true; first || cursor != ""; first = false {
		res, err := list(ctx, cursor)
		if err != nil {
			return out, lc, err
		}
		if ttl := res.GetTTLMs(); first || ttl < lc.TTLMs {
			lc.TTLMs = ttl
		}
		if sc := res.GetCacheScope(); sc == "private" || lc.Scope == "" {
			lc.Scope = sc
		}
		page, next := items(res)
		out = append(out, page...)
		cursor = next
	}
	return out, lc, nil
}

// discover lists what the server offers (every page) and stores it. Only
// a failure to list tools is an error; a server that advertises resources
// or prompts and fails to list them keeps its tools usable.
func (n *Node) discover(ctx context.Context, c *conn, what uint32) error {
	caps := c.cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	cs := c.cs
	caches := map[string]listCache{}
	if what&listTools != 0 {
		tools, lc, err := n.listTools(ctx, c, caps.Tools != nil) // listing.go
		if err != nil {
			return err
		}
		if lc != nil {
			caches["tools"] = *lc
		}
		index := make(map[string]*mcp.Tool, len(tools))
		for _, t := range tools {
			index[t.Name] = t
		}
		n.mu.Lock()
		n.tools, n.toolIndex = tools, index
		n.mu.Unlock()
	}
	// A list that fails to be read again keeps what was read last: a
	// refresh (a list_changed notice, a ttl that passed) that times out or
	// fails must not make a server's resources or prompts vanish from
	// every client until the next change. A server without the capability
	// has none.
	if what&listResources != 0 {
		if caps.Resources == nil {
			n.mu.Lock()
			n.resources, n.templates = nil, nil
			n.mu.Unlock()
		} else {
			res, lc, err := listAll(ctx, func(ctx context.Context, cur string) (*mcp.ListResourcesResult, error) {
				return cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
			}, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return r.Resources, r.NextCursor })
			if err != nil {
				n.log.Warn("listing resources", zap.Error(err))
			} else {
				caches["resources"] = lc
				n.mu.Lock()
				n.resources = res
				n.mu.Unlock()
			}
			tmpl, lc, err := listAll(ctx, func(ctx context.Context, cur string) (*mcp.ListResourceTemplatesResult, error) {
				return cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cur})
			}, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
				return r.ResourceTemplates, r.NextCursor
			})
			if err != nil {
				n.log.Warn("listing resource templates", zap.Error(err))
			} else {
				caches["resource_templates"] = lc
				n.mu.Lock()
				n.templates = tmpl
				n.mu.Unlock()
			}
		}
	}
	if what&listPrompts != 0 {
		if caps.Prompts == nil {
			n.mu.Lock()
			n.prompts = nil
			n.mu.Unlock()
		} else {
			prompts, lc, err := listAll(ctx, func(ctx context.Context, cur string) (*mcp.ListPromptsResult, error) {
				return cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cur})
			}, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return r.Prompts, r.NextCursor })
			if err != nil {
				n.log.Warn("listing prompts", zap.Error(err))
			} else {
				caches["prompts"] = lc
				n.mu.Lock()
				n.prompts = prompts
				n.mu.Unlock()
			}
		}
	}
	n.mu.Lock()
	if n.caches == nil {
		n.caches = map[string]listCache{}
	}
	for k, v := range caches {
		n.caches[k] = v
	}
	n.mu.Unlock()
	return nil
}

// refreshIfStale is refreshStale for the running connection, if any.
func (n *Node) refreshIfStale() {
	n.mu.RLock()
	c := n.conn
	n.mu.RUnlock()
	if c != nil {
		n.refreshStale(c)
	}
}

// refreshStale asks the refresher to read again the lists of c whose ttl
// has passed (listCache), once per expiry: the caller gets the lists as
// they are, the next one the fresh ones.
func (n *Node) refreshStale(c *conn) {
	now := time.Now()
	var what uint32
	n.mu.Lock()
	for k, lc := range n.caches {
		if !lc.stale(now) {
			continue
		}
		switch k {
		case "tools":
			what |= listTools
		case "resources", "resource_templates":
			what |= listResources
		case "prompts":
			what |= listPrompts
		}
		lc.Fetched = now // not again until this refresh is done or fails
		n.caches[k] = lc
	}
	n.mu.Unlock()
	if what != 0 {
		c.requestRefresh(what)
	}
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
		before := n.lists()
		ctx, cancel := context.WithTimeout(c.ctx, n.cfg.startTimeout)
		err := n.discover(ctx, c, what)
		cancel()
		if err != nil {
			n.log.Warn("listing again (list_changed, or a ttl that passed)", zap.Error(err))
			continue
		}
		n.saveCatalog()
		if n.env.OnToolsChanged != nil && n.lists() != before {
			n.env.OnToolsChanged()
		}
	}
}

// lists is the server's lists as JSON, to tell whether a listing changed
// them.
func (n *Node) lists() string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	b, _ := json.Marshal([]any{n.tools, n.resources, n.templates, n.prompts})
	return string(b)
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
	n.refreshIfStale()
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.resources
}

// ResourceTemplates returns the server's resource templates.
func (n *Node) ResourceTemplates() []*mcp.ResourceTemplate {
	n.refreshIfStale()
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.templates
}

// Prompts returns the server's prompts.
func (n *Node) Prompts() []*mcp.Prompt {
	n.refreshIfStale()
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
// ("debug", "info", "notice", "warning", "error", …). A server of
// 2026-07-28 has no logging/setLevel: it gets the level in the _meta of
// every request nerve sends it from now on (protocol.go).
func (n *Node) SetLoggingLevel(ctx context.Context, level string) error {
	cs, err := n.session()
	if err != nil {
		return err
	}
	if isModern(cs) {
		n.logLevel.Store(&level)
		return nil
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		return err
	}
	n.logLevel.Store(&level)
	return nil
}

// Ping checks the server answers: a health check (ping.go says how for
// each era).
func (n *Node) Ping(ctx context.Context) error {
	cs, err := n.session()
	if err != nil {
		return err
	}
	return ping(ctx, cs)
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

// callKey marks the context of a call (call.go): a request for a person
// made in it (input_required, a task's input) arose from that call.
type callKey struct{}

// hookCtx is ctx, ended too when the connection ends or after hookCap. A
// request that arose from a call ends with it, with node.ErrCallEnded as
// the cause, so whoever was asked can say why it was withdrawn.
func hookCtx(ctx context.Context, c *conn) (context.Context, context.CancelFunc) {
	if ctx.Value(callKey{}) != nil {
		call := ctx
		cctx, cancelCall := context.WithCancelCause(context.WithoutCancel(call))
		stopCall := context.AfterFunc(call, func() { cancelCall(node.ErrCallEnded) })
		ctx, cancel := context.WithTimeout(cctx, hookCap)
		stop := context.AfterFunc(c.ctx, cancel)
		return ctx, func() { stop(); cancel(); stopCall(); cancelCall(nil) }
	}
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
