package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// callContext is ctx for a call that client ss makes: who calls, for the
// call log, and — when the client can show a form (elicitation) — whom
// the session's call policy asks to approve it (issue 32, item 4): the
// person at that client, for this call and every call made on its behalf
// (an llm node's, a graph's steps).
func (s *Server) callContext(ctx context.Context, ss *mcp.ServerSession) context.Context {
	c := s.caller(ss)
	ctx = node.WithCaller(ctx, c)
	if !canElicitForm(ss) {
		return ctx
	}
	return session.WithApprover(ctx, func(ctx context.Context, req *session.ApprovalRequest) (session.Approval, error) {
		res, err := ss.Elicit(ctx, req.Elicitation())
		if err != nil {
			return session.Approval{}, err
		}
		return session.ApprovalOf(res, c.String()), nil
	})
}

// canElicitForm reports whether ss's client declared form elicitation
// (a client that declares elicitation without modes means forms).
func canElicitForm(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}
