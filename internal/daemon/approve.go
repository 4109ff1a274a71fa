package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// attachSeq numbers attach streams in the order they come.
var attachSeq atomic.Uint64

// Whom a held call is asked about (issue 32, item 4): a person where one
// is. Two kinds of place:
//
//   - one that interrupts a person, asked in turn: the calling MCP client
//     when it declared form elicitation (its person made the call), else
//     — or when its elicitation fails — a Commander attached to the
//     session, as the Commander answers servers' elicitations
//     (internal/repl/asks.go): each, latest first, is offered it and
//     takes it when its person has a call in flight (the call most likely
//     set it off: an llm node's tool call); if none takes it, the latest
//     must answer;
//   - every open dashboard page of the session (approvalBoard), from the
//     start and whatever else is asked: a prompt on a page interrupts
//     nobody.
//
// The first answer anywhere decides; every other place's request is
// withdrawn with who answered, in how long, and what (answered). Nobody
// to ask — no such client, no Commander, no page open — declines at once.
// A page that opens while a call waits shows its prompt; with a page
// open, the call waits for it to the end of the ask timeout even after
// the client or every Commander went away (a reload closes the page's
// stream for a moment).

// approvalBoard shows held calls to whoever looks, asking nobody in
// particular: the dashboard (internal/dashboard).
type approvalBoard interface {
	// Offer shows req on session name's pages until close is called,
	// which tells them why it went (answered: a person decided). answer
	// takes a page's answer and reports whether it was the first.
	Offer(name string, req *session.ApprovalRequest, expires time.Time, answer func(session.Approval) bool) (close func(answered bool, why string))
	// Watched reports whether a page of session name is open.
	Watched(name string) bool
}

// approver is session s's approver.
func (d *Daemon) approver(s *session.Session) session.Approver {
	var board approvalBoard
	if d.ui != nil {
		board = d.ui
	}
	return func(ctx context.Context, req *session.ApprovalRequest) (session.Approval, error) {
		var person func(context.Context) (session.Approval, error)
		if req.Client != nil || len(commandersOf(s)) > 0 {
			person = func(ctx context.Context) (session.Approval, error) {
				if req.Client != nil {
					a, err := req.Client(ctx, req)
					if err == nil || ctx.Err() != nil {
						return a, err
					}
					d.log.Info("the caller's client could not be asked to approve a call; asking a Commander", zap.Error(err))
				}
				return askCommanders(ctx, s, req)
			}
		}
		return askEverywhere(ctx, s.Name(), req, person, board)
	}
}

// askEverywhere asks person (nil: there is none) and shows req on board
// (nil: none) at once; the first answer wins.
func askEverywhere(ctx context.Context, name string, req *session.ApprovalRequest, person func(context.Context) (session.Approval, error), board approvalBoard) (session.Approval, error) {
	watched := board != nil && board.Watched(name)
	if person == nil && !watched {
		return session.Approval{}, session.ErrNoOneToAsk
	}
	start := time.Now()
	v := &verdict{done: make(chan struct{})}
	var closeBoard func(answered bool, why string)
	if board != nil {
		exp, _ := ctx.Deadline()
		closeBoard = board.Offer(name, req, exp, func(a session.Approval) bool {
			a.By = byDashboard
			return v.settle(a, nil)
		})
	}
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	if person != nil {
		wg.Go(func() {
			a, err := person(pctx)
			switch {
			case pctx.Err() != nil:
			case err == nil:
				v.settle(a, nil)
			case errors.Is(err, session.ErrNoOneToAsk) && (watched || board != nil && board.Watched(name)):
				// Nobody here any more: the pages are left.
			default:
				v.settle(session.Approval{}, err)
			}
		})
	}
	select {
	case <-v.done:
	case <-ctx.Done():
		v.settle(session.Approval{}, ctx.Err())
	}
	a, err := v.a, v.err
	var end error = &answered{by: a.By, after: time.Since(start), a: a}
	if err != nil {
		end = err
	}
	cancel(end)
	wg.Wait()
	if closeBoard != nil {
		closeBoard(err == nil, withdrawnWhy(pctx))
	}
	return a, err
}

// byDashboard is Approval.By for an answer given on the dashboard.
const byDashboard = "dashboard"

// verdict is the first answer to one held call, from wherever it came.
type verdict struct {
	// mu guards the fields below.
	mu   sync.Mutex
	set  bool
	a    session.Approval
	err  error
	done chan struct{} // closed when set
}

// settle records a, err unless an answer came first; it reports whether
// it was the first.
func (v *verdict) settle(a session.Approval, err error) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.set {
		return false
	}
	v.set, v.a, v.err = true, a, err
	close(v.done)
	return true
}

// answered ends the other places' requests once a person answered one.
type answered struct {
	by    string
	after time.Duration
	a     session.Approval
}

func (e *answered) Error() string {
	what := "denied"
	switch {
	case e.a.Allow && e.a.Remember:
		what = fmt.Sprintf("allowed, and the same call for %d minutes", int(session.RememberFor/time.Minute))
	case e.a.Allow:
		what = "allowed once"
	}
	place := e.by
	switch e.by {
	case byRepl:
		place = "the Commander"
	case byDashboard:
		place = "the dashboard"
	}
	after := e.after.Round(time.Millisecond)
	switch {
	case after >= time.Minute:
		after = after.Round(time.Second)
	case after >= time.Second:
		after = after.Round(100 * time.Millisecond)
	}
	return fmt.Sprintf("answered by %s in %s: %s", place, after, what)
}

// withdrawnWhy says why a request for approval was withdrawn when ctx,
// its ask's, ended.
func withdrawnWhy(ctx context.Context) string {
	var a *answered
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &a):
		return a.Error()
	case errors.Is(cause, context.DeadlineExceeded):
		return "nobody approved it in time"
	}
	return "the call no longer waits for it"
}

// byRepl is Approval.By for an answer given at a Commander.
const byRepl = "repl"

// askCommanders asks the Commanders attached to session s, as the
// comment above approvalBoard says.
func askCommanders(ctx context.Context, s *session.Session, req *session.ApprovalRequest) (session.Approval, error) {
	cs := commandersOf(s)
	params := req.Elicitation()
	var res mcp.ElicitResult
	for _, c := range cs {
		err := c.ask(ctx, api.AttachOfferElicit, params, &res, withdrawnWhy)
		if err == nil {
			return session.ApprovalOf(&res, byRepl), nil
		}
		if !errors.Is(err, errPassed) && !errors.Is(err, errGone) || ctx.Err() != nil {
			return session.Approval{}, cmp.Or(ctx.Err(), err)
		}
	}
	for _, c := range cs {
		err := c.ask(ctx, api.AttachElicit, params, &res, withdrawnWhy)
		if err == nil {
			return session.ApprovalOf(&res, byRepl), nil
		}
		if !errors.Is(err, errGone) || ctx.Err() != nil {
			return session.Approval{}, cmp.Or(ctx.Err(), err)
		}
	}
	return session.Approval{}, session.ErrNoOneToAsk
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
