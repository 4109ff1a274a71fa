package daemon

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// attachSeq numbers attach streams in the order they come.
var attachSeq atomic.Uint64

// approver is session s's approver (issue 32, item 4): a call the policy
// asks about, whose caller's own MCP client could not be asked, goes to a
// person at a Commander attached to the session, by the path the
// Commander answers servers' elicitations (internal/repl/asks.go): each
// Commander, latest first, is offered it and takes it when its person has
// a call in flight (the call most likely set it off: an llm node's tool
// call); if none takes it, the latest must answer. No Commander: nobody
// to ask.
func approver(s *session.Session) session.Approver {
	return func(ctx context.Context, req *session.ApprovalRequest) (session.Approval, error) {
		cs := commandersOf(s)
		if len(cs) == 0 {
			return session.Approval{}, session.ErrNoOneToAsk
		}
		params := req.Elicitation()
		why := func(ctx context.Context) string {
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return "nobody approved it in time"
			}
			return "the call no longer waits for it"
		}
		var res mcp.ElicitResult
		for _, c := range cs {
			err := c.ask(ctx, api.AttachOfferElicit, params, &res, why)
			if err == nil {
				return session.ApprovalOf(&res, "repl"), nil
			}
			if !errors.Is(err, errPassed) && !errors.Is(err, errGone) || ctx.Err() != nil {
				return session.Approval{}, cmp.Or(ctx.Err(), err)
			}
		}
		for _, c := range cs {
			err := c.ask(ctx, api.AttachElicit, params, &res, why)
			if err == nil {
				return session.ApprovalOf(&res, "repl"), nil
			}
			if !errors.Is(err, errGone) || ctx.Err() != nil {
				return session.Approval{}, cmp.Or(ctx.Err(), err)
			}
		}
		return session.Approval{}, session.ErrNoOneToAsk
	}
}

// commandersOf returns the Commanders' attach streams on session s's
// nodes, latest first.
func commandersOf(s *session.Session) []*streamAttachment {
	attachMu.Lock()
	var out []*streamAttachment
	for key, g := range attachGroups {
		if key.s != s {
			continue
		}
		for _, m := range g.members {
			if a, ok := m.(*streamAttachment); ok && a.commander {
				out = append(out, a)
			}
		}
	}
	attachMu.Unlock()
	slices.SortFunc(out, func(a, b *streamAttachment) int { return cmp.Compare(b.seq, a.seq) })
	return out
}
