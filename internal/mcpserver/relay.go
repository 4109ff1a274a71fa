package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// client returns the MCP client to pass a node's request to: of the
// clients that can answer it (want reports the capability), the one whose
// tool call started last and is still running, else the one that spoke
// last, else any.
func (s *Server) client(want func(*mcp.ClientCapabilities) bool) *mcp.ServerSession {
	s.inflightMu.Lock()
	busy := slices.Clone(s.inflight)
	s.inflightMu.Unlock()
	can := func(ss *mcp.ServerSession) bool {
		p := ss.InitializeParams()
		return p != nil && p.Capabilities != nil && want(p.Capabilities) && (s.live == nil || s.live.reachable(ss.ID()))
	}
	var live []*mcp.ServerSession
	for ss := range s.srv.Sessions() {
		if can(ss) {
			live = append(live, ss)
		}
	}
	for i := len(busy) - 1; i >= 0; i-- {
		if slices.Contains(live, busy[i]) {
			return busy[i]
		}
	}
	if last := s.last.Load(); slices.Contains(live, last) {
		return last
	}
	if len(live) > 0 {
		return live[len(live)-1]
	}
	return nil
}

// callStarted records that ss has a tool call running; the returned
// function ends it.
func (s *Server) callStarted(ss *mcp.ServerSession) func() {
	s.inflightMu.Lock()
	s.inflight = append(s.inflight, ss)
	s.inflightMu.Unlock()
	return func() {
		s.inflightMu.Lock()
		defer s.inflightMu.Unlock()
		if i := slices.Index(s.inflight, ss); i >= 0 {
			s.inflight = slices.Delete(s.inflight, i, i+1)
		}
	}
}

// attachment passes a node's hook requests to the MCP client.
type attachment struct{ s *Server }

func (a attachment) Sample(ctx context.Context, nodeID string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ss := a.s.client(func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
	if ss == nil {
		return nil, session.ErrNoOneToAsk
	}
	ctx, gone := a.s.whileReachable(ctx, ss)
	defer gone()
	res, err := ss.CreateMessage(ctx, req)
	if err != nil && gone() {
		return nil, fmt.Errorf("%w (its MCP client went away)", session.ErrNoOneToAsk)
	}
	return res, err
}

func (a attachment) Elicit(ctx context.Context, nodeID string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ss := a.s.client(func(c *mcp.ClientCapabilities) bool { return canElicit(c.Elicitation, req) })
	if ss == nil {
		return node.NoOneDeclined(), nil
	}
	ctx, gone := a.s.whileReachable(ctx, ss)
	defer gone()
	res, err := ss.Elicit(ctx, req)
	if err != nil && gone() {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return res, err
}

// canElicit says whether a client with elicitation capabilities caps can
// be asked req: a URL-mode request only of a client that declared URL
// mode (MCP 2025-11-25; the SDK refuses to send it to another), a form of
// one that declared forms or neither mode (the older form-only
// capability). A client that cannot is passed over for one that can.
func canElicit(caps *mcp.ElicitationCapabilities, req *mcp.ElicitParams) bool {
	switch {
	case caps == nil:
		return false
	case req.Mode == "url" || req.Mode == "" && req.URL != "":
		return caps.URL != nil
	}
	return caps.Form != nil || caps.URL == nil
}

// available says whether any client of the server can be sent a request.
func (a attachment) available() bool {
	if a.s.live == nil {
		return true
	}
	for ss := range a.s.srv.Sessions() {
		if a.s.live.reachable(ss.ID()) {
			return true
		}
	}
	return false
}

// liveness knows which clients can be sent a request (http_sessions.go).
type liveness interface {
	reachable(id string) bool
	unreachable(id string) (<-chan struct{}, func())
}

// whileReachable returns ctx cancelled when ss's client can no longer be
// reached (its stream ended while the request waited for an answer), and
// a function that ends the watch and says whether that happened.
func (s *Server) whileReachable(ctx context.Context, ss *mcp.ServerSession) (context.Context, func() bool) {
	if s.live == nil {
		return ctx, func() bool { return false }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	errGone := errors.New("the MCP client went away")
	unreachable, unwatch := s.live.unreachable(ss.ID())
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case <-unreachable:
			cancel(errGone)
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, func() bool {
		once.Do(func() { close(stop); unwatch() })
		gone := errors.Is(context.Cause(ctx), errGone)
		cancel(nil)
		return gone
	}
}
