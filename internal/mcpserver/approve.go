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
	var who asker = ss
	caps := (*mcp.ClientCapabilities)(nil)
	if ss != nil && ss.InitializeParams() != nil && !modernSession(ss) {
		caps = ss.InitializeParams().Capabilities
	}
	if pc := pendingOf(ctx); pc != nil {
		// A client of 2026-07-28 is asked through input_required
		// (mrtr.go).
		who, caps = pc, pc.capabilities()
	}
	if t := taskOf(ctx); t != nil {
		// … or through its task's tasks/get (tasks.go).
		who, caps = t, t.caps
	}
	if !canElicitForm(caps) {
		return ctx
	}
	return session.WithApprover(ctx, func(ctx context.Context, req *session.ApprovalRequest) (session.Approval, error) {
		res, err := who.Elicit(ctx, req.Elicitation())
		if err != nil {
			return session.Approval{}, err
		}
		return session.ApprovalOf(res, c.String()), nil
	})
}

// canElicitForm reports whether a client with caps declared form
// elicitation (a client that declares elicitation without modes means
// forms).
func canElicitForm(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}
