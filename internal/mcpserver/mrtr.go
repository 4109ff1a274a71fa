package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// Multi round-trip requests (SEP-2322), the server's half. A client of
// 2026-07-28 may not be sent a request in the middle of its call, but the
// node it calls may ask for one: an MCP server's elicitation or sampling,
// a graph's ask: gate, the session's policy asking to approve the call.
// So the call of such a client runs on its own (a pendingCall), and its
// request is answered with whichever comes first: the call's result, or
// the questions it waits on, as input_required with a requestState. The
// client's retry — the same request with inputResponses and that
// requestState — hands the answers to the questions, which the call was
// kept waiting on, and waits again. Between an input_required answer and
// the retry the call is held, keyed by its requestState, for at most
// pendingIdle and with at most maxPending calls so held per server; a
// requestState that names no held call (it expired, the daemon
// restarted, or it was altered) is refused with -32602.

// Bounds on the calls held between rounds.
const (
	// pendingIdle is how long a call waits for the client's retry after
	// an input_required answer before it is cancelled.
	pendingIdle = 10 * time.Minute
	// maxPending is how many calls a server holds between rounds; past
	// it the one that has waited longest is cancelled.
	maxPending = 256
	// askSettle gathers the questions a call asks together (an MCP
	// server's input_required with several, fanned out by its SDK): they
	// go to the client in one answer.
	askSettle = 50 * time.Millisecond
)

// errPendingExpired ends a call whose client did not come back.
var errPendingExpired = errors.New("the client did not answer the call's questions in time")

// pendingKey finds a round's pending call in a call's context.
type pendingKey struct{}

// pendingOf returns the pending call ctx belongs to, if any.
func pendingOf(ctx context.Context) *pendingCall {
	pc, _ := ctx.Value(pendingKey{}).(*pendingCall)
	return pc
}

// pendingCall is a call of a 2026-07-28 client, kept going across the
// rounds of its request. It answers the node's questions as an asker
// (relay.go).
type pendingCall struct {
	s      *Server
	key    string // the method and the name of what is called
	cancel context.CancelCauseFunc
	done   chan struct{}
	res    mcp.Result
	err    error

	// mu guards the fields below.
	mu      sync.Mutex
	caps    *mcp.ClientCapabilities // of the latest round's request
	asks    []*question             // unanswered, in the order asked
	seq     int
	changed chan struct{} // a question was asked (capacity 1)
	state   string        // the requestState the client must send back
	waiting bool          // a round's request is waiting on the call
	idle    *time.Timer   // cancels the call while nobody waits
	held    time.Time     // when the call was last left waiting for a retry
}

// question is one thing the call asks of the client.
type question struct {
	key    string
	req    mcp.InputRequest
	answer chan mcp.InputResponse // capacity 1
}

// pendingCalls holds a server's calls between rounds, by requestState,
// and knows every call running so that Run's end stops them.
type pendingCalls struct {
	mu      sync.Mutex
	m       map[string]*pendingCall
	running map[*pendingCall]struct{}
	stopped bool // Run ended: no call starts
	wg      sync.WaitGroup
}

// stop cancels every call of the server's 2026-07-28 clients and waits
// for them to end (Run's end).
func (p *pendingCalls) stop() {
	p.mu.Lock()
	p.stopped = true
	var running []*pendingCall
	for pc := range p.running {
		running = append(running, pc)
	}
	p.mu.Unlock()
	for _, pc := range running {
		pc.cancel(errServerStopped)
	}
	p.wg.Wait()
}

// errServerStopped ends the calls of a server that stopped.
var errServerStopped = errors.New("nerve's MCP server for this client stopped")

// rounds answers a request of a 2026-07-28 client: a new call, run by run,
// or the retry of one (a requestState). It returns the call's result, or
// the questions to send back as input_required with the requestState.
func (s *Server) rounds(ctx context.Context, key string, caps *mcp.ClientCapabilities, state string, answers mcp.InputResponseMap, run func(context.Context) (mcp.Result, error)) (mcp.Result, mcp.InputRequestMap, string, error) {
	var pc *pendingCall
	if state != "" {
		var err error
		if pc, err = s.resume(key, state); err != nil {
			return nil, nil, "", err
		}
		pc.setCaps(caps)
		if err := pc.answer(answers); err != nil {
			pc.release()
			return nil, nil, "", err
		}
	} else {
		pc = s.startPending(ctx, key, caps, run)
	}
	return pc.wait(ctx)
}

// startPending runs run as a pending call. Its context keeps ctx's values
// (the client, its log level, the request notifications follow) but not
// its end: the round's request ends with input_required while the call
// goes on.
func (s *Server) startPending(ctx context.Context, key string, caps *mcp.ClientCapabilities, run func(context.Context) (mcp.Result, error)) *pendingCall {
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	pc := &pendingCall{s: s, key: key, cancel: cancel, done: make(chan struct{}), caps: caps, changed: make(chan struct{}, 1), waiting: true}
	cctx = context.WithValue(cctx, pendingKey{}, pc)
	s.pending.mu.Lock()
	if s.pending.stopped {
		cancel(errServerStopped)
	}
	if s.pending.running == nil {
		s.pending.running = map[*pendingCall]struct{}{}
	}
	s.pending.running[pc] = struct{}{}
	s.pending.wg.Add(1)
	s.pending.mu.Unlock()
	ended := s.callStarted(pc) // node hooks reach it (relay.go)
	go func() {
		defer s.pending.wg.Done()
		defer func() {
			s.pending.mu.Lock()
			delete(s.pending.running, pc)
			s.pending.mu.Unlock()
		}()
		defer close(pc.done)
		defer ended()
		defer cancel(nil)
		pc.res, pc.err = run(cctx)
		if pc.err != nil && context.Cause(cctx) != nil && !errors.Is(context.Cause(cctx), context.Canceled) {
			pc.err = context.Cause(cctx)
		}
	}()
	return pc
}

// resume finds the call a retry's requestState names and makes the retry
// its waiter.
func (s *Server) resume(key, state string) (*pendingCall, error) {
	s.pending.mu.Lock()
	pc := s.pending.m[state]
	s.pending.mu.Unlock()
	if pc == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"requestState %q names no call waiting for answers: it was altered, or its call ended (it waits %v for a retry, and a daemon restart ends it); send the request again without requestState",
			clip(state, 40), pendingIdle)}
	}
	if pc.key != key {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState belongs to another request (" + pc.key + "): send it back with the request that received it"}
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.waiting {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is being answered by another request of this client: wait for that one's answer"}
	}
	pc.waiting = true
	if pc.idle != nil {
		pc.idle.Stop()
	}
	return pc, nil
}

// release gives a call back to waiting for a retry after a round that
// failed before it waited.
func (pc *pendingCall) release() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.holdLocked()
}

func (pc *pendingCall) setCaps(caps *mcp.ClientCapabilities) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.caps = caps
}

// capabilities returns what the client of the latest round declared.
func (pc *pendingCall) capabilities() *mcp.ClientCapabilities {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.caps
}

// answer hands the retry's answers to the questions they answer; answers
// to nothing asked are ignored (SEP-2322), one of the wrong kind is
// refused.
func (pc *pendingCall) answer(answers mcp.InputResponseMap) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, q := range pc.asks {
		r, ok := answers[q.key]
		if !ok {
			continue
		}
		if err := fits(q.req, r); err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q]: %v", q.key, err)}
		}
	}
	pc.asks = slices.DeleteFunc(pc.asks, func(q *question) bool {
		r, ok := answers[q.key]
		if ok {
			q.answer <- r
		}
		return ok
	})
	return nil
}

// fits checks that r answers a question of req's kind.
func fits(req mcp.InputRequest, r mcp.InputResponse) error {
	var ok bool
	switch req.(type) {
	case *mcp.ElicitParams:
		_, ok = r.(*mcp.ElicitResult)
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		switch r.(type) {
		case *mcp.CreateMessageResult, *mcp.CreateMessageWithToolsResult:
			ok = true
		}
	case *mcp.ListRootsParams:
		_, ok = r.(*mcp.ListRootsResult)
	}
	if !ok {
		return fmt.Errorf("%T does not answer %T", r, req)
	}
	return nil
}

// wait waits for the call's result or its questions.
func (pc *pendingCall) wait(ctx context.Context) (mcp.Result, mcp.InputRequestMap, string, error) {
	for {
		if pc.open() && !pc.asking() {
			// Asked before this round (not answered by the retry).
			if qs, state := pc.unanswered(); len(qs) > 0 {
				return nil, qs, state, nil
			}
		}
		select {
		case <-pc.done:
			pc.s.forget(pc)
			return pc.res, nil, "", pc.err
		case <-pc.changed:
			// More may come with this one.
			t := time.NewTimer(askSettle)
		settle:
			for {
				select {
				case <-pc.changed:
				case <-t.C:
					break settle
				case <-pc.done:
					t.Stop()
					break settle
				}
			}
			if qs, state := pc.unanswered(); len(qs) > 0 {
				return nil, qs, state, nil
			}
		case <-ctx.Done():
			// The client cancelled, or its request's connection ended:
			// so does the call.
			pc.cancel(context.Cause(ctx))
			pc.s.forget(pc)
			return nil, nil, "", ctx.Err()
		}
	}
}

// open reports whether a question waits for its answer.
func (pc *pendingCall) open() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.asks) > 0
}

// asking reports whether a question arrived that has not been gathered
// yet (pc.changed is set): wait lets it settle with the others.
func (pc *pendingCall) asking() bool { return len(pc.changed) > 0 }

// unanswered returns the questions the client has not answered and, when
// there are some, leaves the call waiting for a retry under a new
// requestState.
func (pc *pendingCall) unanswered() (mcp.InputRequestMap, string) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if len(pc.asks) == 0 {
		return nil, ""
	}
	qs := make(mcp.InputRequestMap, len(pc.asks))
	for _, q := range pc.asks {
		qs[q.key] = q.req
	}
	old := pc.state
	pc.state = rand.Text()
	pc.holdLocked()
	pc.s.hold(pc, old)
	return qs, pc.state
}

// holdLocked leaves the call waiting for a retry, cancelled if none comes
// within pendingIdle. pc.mu is held.
func (pc *pendingCall) holdLocked() {
	pc.waiting = false
	pc.held = time.Now()
	if pc.idle == nil {
		pc.idle = time.AfterFunc(pendingIdle, pc.expire)
	} else {
		pc.idle.Reset(pendingIdle)
	}
}

// expire cancels a call whose client did not retry in time.
func (pc *pendingCall) expire() {
	pc.mu.Lock()
	waiting := pc.waiting
	pc.mu.Unlock()
	if waiting {
		return
	}
	pc.s.log.Info("a call of a 2026-07-28 client waited for answers too long: cancelled", zap.String("call", pc.key), zap.Duration("waited", pendingIdle))
	pc.cancel(errPendingExpired)
	pc.s.forget(pc)
}

// hold files pc under its requestState (in place of old), cancelling the
// call held longest when there are too many.
func (s *Server) hold(pc *pendingCall, old string) {
	var evict *pendingCall
	s.pending.mu.Lock()
	if s.pending.m == nil {
		s.pending.m = map[string]*pendingCall{}
	}
	delete(s.pending.m, old)
	s.pending.m[pc.state] = pc
	if len(s.pending.m) > maxPending {
		for _, o := range s.pending.m {
			if o != pc && (evict == nil || o.heldSince().Before(evict.heldSince())) {
				evict = o
			}
		}
	}
	s.pending.mu.Unlock()
	if evict != nil {
		s.log.Info("too many calls of 2026-07-28 clients wait for answers: cancelling the oldest", zap.String("call", evict.key), zap.Int("max", maxPending))
		evict.cancel(fmt.Errorf("%w: more than %d calls waited for answers at once", errPendingExpired, maxPending))
		s.forget(evict)
	}
}

func (pc *pendingCall) heldSince() time.Time {
	if pc.mu.TryLock() {
		defer pc.mu.Unlock()
		return pc.held
	}
	return time.Now() // busy: it is being answered
}

// forget drops a call that ended from those held.
func (s *Server) forget(pc *pendingCall) {
	pc.mu.Lock()
	state := pc.state
	if pc.idle != nil {
		pc.idle.Stop()
	}
	pc.mu.Unlock()
	s.pending.mu.Lock()
	if s.pending.m[state] == pc {
		delete(s.pending.m, state)
	}
	s.pending.mu.Unlock()
}

// pendingCount is how many calls wait for a retry.
func (s *Server) pendingCount() int {
	s.pending.mu.Lock()
	defer s.pending.mu.Unlock()
	return len(s.pending.m)
}

// ask puts one question to the client and waits for its answer.
func (pc *pendingCall) ask(ctx context.Context, kind string, req mcp.InputRequest) (mcp.InputResponse, error) {
	pc.mu.Lock()
	pc.seq++
	q := &question{key: fmt.Sprintf("%s-%d", kind, pc.seq), req: req, answer: make(chan mcp.InputResponse, 1)}
	pc.asks = append(pc.asks, q)
	pc.mu.Unlock()
	select {
	case pc.changed <- struct{}{}:
	default:
	}
	drop := func() {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		pc.asks = slices.DeleteFunc(pc.asks, func(o *question) bool { return o == q })
	}
	select {
	case r := <-q.answer:
		return r, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	case <-pc.done:
		drop()
		return nil, errors.New("the call ended")
	}
}

// askFunc puts one question to a client that answers it later
// (input_required for a held call, a task's inputRequests): pendingCall.ask
// and task.ask. Its methods make it an asker.
type askFunc func(ctx context.Context, kind string, req mcp.InputRequest) (mcp.InputResponse, error)

// Elicit asks for an elicitation (asker).
func (ask askFunc) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	r, err := ask(ctx, "elicitation", p)
	if err != nil {
		return nil, err
	}
	return r.(*mcp.ElicitResult), nil // fits checked its kind
}

// CreateMessage asks for a sample (asker).
func (ask askFunc) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	r, err := ask(ctx, "sampling", p)
	if err != nil {
		return nil, err
	}
	switch r := r.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		res := &mcp.CreateMessageResult{Meta: r.Meta, Model: r.Model, Role: r.Role, StopReason: r.StopReason}
		if len(r.Content) > 0 {
			res.Content = r.Content[0]
		}
		return res, nil
	}
	return nil, fmt.Errorf("the client answered a sampling request with %T", r)
}

// Elicit asks the client through input_required (asker).
func (pc *pendingCall) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return askFunc(pc.ask).Elicit(ctx, p)
}

// CreateMessage asks the client to sample through input_required (asker).
func (pc *pendingCall) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return askFunc(pc.ask).CreateMessage(ctx, p)
}

// clip shortens s for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// The three requests a server may answer with input_required. Each
// handler the server registers is wrapped so that a 2026-07-28 client's
// request runs in rounds; another client's runs as before, its questions
// sent to it directly (relay.go).

// roundsTool wraps a tool's handler.
func (s *Server) roundsTool(name string, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params == nil || !modernRequest(req) || taskOf(ctx) != nil {
			// A task asks through tasks/get instead (tasks.go).
			return h(ctx, req)
		}
		p := *req.Params
		res, qs, state, err := s.rounds(ctx, "tools/call "+name, req.ClientCapabilities(), p.RequestState, p.InputResponses, func(ctx context.Context) (mcp.Result, error) {
			first := *req
			p.RequestState, p.InputResponses = "", nil
			first.Params = &p
			return h(ctx, &first)
		})
		if err != nil || qs != nil {
			return &mcp.CallToolResult{InputRequests: qs, RequestState: state}, err
		}
		r, _ := res.(*mcp.CallToolResult)
		return r, nil
	}
}

// roundsPrompt wraps a prompt's handler.
func (s *Server) roundsPrompt(name string, h mcp.PromptHandler) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if req.Params == nil || !modernRequest(req) {
			return h(ctx, req)
		}
		p := *req.Params
		res, qs, state, err := s.rounds(ctx, "prompts/get "+name, req.ClientCapabilities(), p.RequestState, p.InputResponses, func(ctx context.Context) (mcp.Result, error) {
			first := *req
			p.RequestState, p.InputResponses = "", nil
			first.Params = &p
			return h(ctx, &first)
		})
		if err != nil || qs != nil {
			return &mcp.GetPromptResult{InputRequests: qs, RequestState: state}, err
		}
		r, _ := res.(*mcp.GetPromptResult)
		return r, nil
	}
}

// roundsResource wraps a resource's (or template's) handler.
func (s *Server) roundsResource(h mcp.ResourceHandler) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if req.Params == nil || !modernRequest(req) {
			return h(ctx, req)
		}
		p := *req.Params
		res, qs, state, err := s.rounds(ctx, "resources/read "+p.URI, req.ClientCapabilities(), p.RequestState, p.InputResponses, func(ctx context.Context) (mcp.Result, error) {
			first := *req
			p.RequestState, p.InputResponses = "", nil
			first.Params = &p
			return h(ctx, &first)
		})
		if err != nil || qs != nil {
			return &mcp.ReadResourceResult{InputRequests: qs, RequestState: state}, err
		}
		r, _ := res.(*mcp.ReadResourceResult)
		return r, nil
	}
}
