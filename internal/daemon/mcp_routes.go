package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/sendq"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// mcpRoutes adds the routes `nerve mcp serve` and `nerve mcp url` use: the
// endpoint's address, an mcp node's resources and prompts, and the attach
// stream through which the node's requests for a person reach the MCP
// client of `nerve mcp serve --node`.
func (d *Daemon) mcpRoutes(mux *http.ServeMux) {
	for _, r := range []struct {
		pattern string
		handler http.HandlerFunc
	}{
		{"GET /v1/sessions/{session}/mcp", d.handleMCPEndpoint},
		{"GET /v1/sessions/{session}/mcp/stdio", d.handleMCPStdio}, // mcp_stdio.go
		{"GET /v1/sessions/{session}/nodes/{node}/mcp", d.handleMCPFeatures},
		{"POST /v1/sessions/{session}/nodes/{node}/mcp", d.handleMCPRequest},
		{"GET /v1/sessions/{session}/nodes/{node}/mcp/attach", d.handleMCPAttach},
		{"POST /v1/sessions/{session}/nodes/{node}/mcp/attach/{id}", d.handleMCPAnswer},
		{"POST /v1/sessions/{session}/nodes/{node}/sample", d.handleSample}, // sample_routes.go
	} {
		mux.HandleFunc(r.pattern, r.handler)
	}
}

func (d *Daemon) handleMCPEndpoint(w http.ResponseWriter, r *http.Request) {
	if _, err := d.sessionOf(r, false); err != nil {
		writeErr(w, err)
		return
	}
	ep, ok := d.mcpEndpoint()
	if !ok {
		writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound,
			Message: "this nerve serves no MCP endpoint (an embedded session has none, or it failed to start: see `nerve daemon status`); use `nerve mcp serve` on stdio instead"})
		return
	}
	name := r.PathValue("session")
	out := api.MCPEndpoint{URL: ep.URL(name), Token: ep.Token(), NodeURL: ep.NodeURL(name, "NODE")}
	if d.opts.Paths.State != "" {
		out.TokenFile = filepath.Join(d.opts.Paths.State, mcpTokenFile)
	}
	writeJSON(w, http.StatusOK, out)
}

// mcpBackend returns the backend of the request's session.
func (d *Daemon) mcpBackend(r *http.Request) (*mcpserver.SessionBackend, error) {
	s, err := d.sessionOf(r, false)
	if err != nil {
		return nil, err
	}
	return mcpserver.NewSessionBackend(s), nil
}

func writeMCPErr(w http.ResponseWriter, err error) {
	if errors.Is(err, mcpserver.ErrNoFeatures) {
		writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotMCP, Message: err.Error()})
		return
	}
	writeNodeErr(w, err)
}

func (d *Daemon) handleMCPFeatures(w http.ResponseWriter, r *http.Request) {
	b, err := d.mcpBackend(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	f, err := b.MCPNode(r.Context(), r.PathValue("node"))
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, mcpserver.FeaturesOf(f))
}

func (d *Daemon) handleMCPRequest(w http.ResponseWriter, r *http.Request) {
	var req api.MCPRequest
	if err := readJSON(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	b, err := d.mcpBackend(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	ctx, id := r.Context(), r.PathValue("node")
	decode := func(v any) error {
		if len(req.Params) == 0 {
			return badRequest(fmt.Errorf("%s needs params", req.Method))
		}
		if err := json.Unmarshal(req.Params, v); err != nil {
			return badRequest(fmt.Errorf("params of %s: %w", req.Method, err))
		}
		return nil
	}
	// on runs do on the node: once running, by the session's waiting
	// rule, or as it is (unsubscribe and setLevel start no lazy node).
	on := func(running bool, do func(f mcpserver.MCPNode) (any, error)) (any, error) {
		get := b.MCPNode
		if running {
			get = b.RunningMCPNode
		}
		f, err := get(ctx, id)
		if err != nil {
			return nil, err
		}
		return do(f)
	}
	var res any
	switch req.Method {
	case api.MCPReadResource:
		var p mcp.ReadResourceParams
		if err = decode(&p); err == nil {
			res, err = on(true, func(f mcpserver.MCPNode) (any, error) { return f.ReadResource(ctx, p.URI) })
		}
	case api.MCPGetPrompt:
		var p mcp.GetPromptParams
		if err = decode(&p); err == nil {
			res, err = on(true, func(f mcpserver.MCPNode) (any, error) { return f.GetPrompt(ctx, p.Name, p.Arguments) })
		}
	case api.MCPComplete:
		var p mcp.CompleteParams
		if err = decode(&p); err == nil {
			res, err = on(true, func(f mcpserver.MCPNode) (any, error) { return f.Complete(ctx, &p) })
		}
	case api.MCPSubscribe, api.MCPUnsubscribe:
		var p mcp.SubscribeParams
		if err = decode(&p); err == nil {
			sub := req.Method == api.MCPSubscribe
			res, err = on(sub, func(f mcpserver.MCPNode) (any, error) {
				if sub {
					return struct{}{}, f.Subscribe(ctx, p.URI)
				}
				return struct{}{}, f.Unsubscribe(ctx, p.URI)
			})
		}
	case api.MCPSetLevel:
		var p mcp.SetLoggingLevelParams
		if err = decode(&p); err == nil {
			res, err = on(false, func(f mcpserver.MCPNode) (any, error) {
				return struct{}{}, f.SetLoggingLevel(ctx, string(p.Level))
			})
		}
	default:
		err = badRequest(fmt.Errorf("unknown MCP method %q (use %s, %s, %s, %s, %s or %s)", req.Method,
			api.MCPReadResource, api.MCPGetPrompt, api.MCPComplete, api.MCPSubscribe, api.MCPUnsubscribe, api.MCPSetLevel))
	}
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// pendingAnswers are the attach requests waiting for their client.
var pendingAnswers sync.Map // id → chan api.AttachAnswer

// streamAttachment writes a node's requests for a person to an attach
// stream and waits for the answers posted back.
//
// Its lines go through a queue of the stream's own (internal/sendq): a
// resource's news comes from the node's delivery goroutine, which must
// never wait for a REPL suspended with Ctrl-Z.
type streamAttachment struct {
	mu sync.Mutex // guards closed
	// closed is set when the handler returns: the queue is closed, and
	// the ResponseWriter must not be touched after that (net/http
	// finishes the response).
	closed bool
	q      *sendq.Queue[[]byte]
	w      http.ResponseWriter
	ctx    context.Context // the stream's
	// commander marks a REPL's stream: it is offered requests first and
	// may pass them on (api.AttachPass).
	commander bool
	// seq orders streams by when they attached (approve.go asks the
	// latest Commander).
	seq uint64
	// whoIs says who the client is, as it said (api.AttachWho).
	whoIs string
}

// attachQueueBytes bounds the lines queued for an attach stream whose
// client does not read; beyond it they are dropped.
const attachQueueBytes = 256 << 10

// attachMember is one member of an attachGroup: an attach stream, or
// the MCP server of a connection switched to MCP (mcp_stdio.go).
type attachMember interface {
	// ask asks for kind (api.AttachSample, api.AttachElicit or an offer
	// of either) with params and decodes the answer into result; why says
	// why the request was withdrawn when ctx ends first.
	ask(ctx context.Context, kind string, params, result any, why func(context.Context) string) error
	// isCommander marks a REPL: it is offered requests first.
	isCommander() bool
	// who names the member for a caller whose question it is asked
	// (node.Asked).
	who() string
	resourceUpdated(uri string)
}

func newStreamAttachment(ctx context.Context, w http.ResponseWriter, commander bool) *streamAttachment {
	a := &streamAttachment{w: w, ctx: ctx, commander: commander, seq: attachSeq.Add(1)}
	a.q = sendq.New(attachQueueBytes, a.write)
	return a
}

func (a *streamAttachment) isCommander() bool { return a.commander }

func (a *streamAttachment) who() string {
	what := "a client attached to the node"
	if a.commander {
		what = "the Commander"
	}
	if a.whoIs != "" {
		what += " (" + a.whoIs + ")"
	}
	return what
}

func (a *streamAttachment) resourceUpdated(uri string) {
	_ = a.send(api.AttachLine{Kind: api.AttachResourceUpdated, URI: uri})
}

// send queues line for the stream; it never waits for the client.
func (a *streamAttachment) send(line api.AttachLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errGone
	}
	if !a.q.Push(b, len(b)) {
		return fmt.Errorf("the client is %d KiB behind on its stream", attachQueueBytes>>10)
	}
	return nil
}

// write writes a batch of queued lines, on the queue's goroutine.
func (a *streamAttachment) write(batch []sendq.Item[[]byte]) {
	for _, it := range batch {
		if _, err := a.w.Write(it.Value); err != nil {
			return
		}
	}
	flush(a.w)
}

// errPassed is a commander passing an offered request on; errGone is a
// client that went away before answering.
var (
	errPassed = errors.New("passed on")
	errGone   = errors.New("the MCP client went away before answering")
)

// ask sends a request and waits for its answer, ctx or the stream's end.
// When ctx ends first, the stream is told that the request was withdrawn
// and why (issue: a person went on answering a request nobody waited
// for), so that whoever shows it stops.
func (a *streamAttachment) ask(ctx context.Context, kind string, params, result any, why func(context.Context) string) error {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ch := make(chan api.AttachAnswer, 1)
	pendingAnswers.Store(id, ch)
	defer pendingAnswers.Delete(id)
	data, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if err := a.send(api.AttachLine{Kind: kind, ID: id, Params: data}); err != nil {
		return fmt.Errorf("%w: %v", errGone, err)
	}
	select {
	case ans := <-ch:
		switch ans.Error {
		case "":
			return json.Unmarshal(ans.Result, result)
		case api.AttachPass:
			return errPassed
		}
		return errors.New(ans.Error)
	case <-ctx.Done():
		// From here on an answer is refused as one nobody waits for.
		pendingAnswers.Delete(id)
		reason := "the server no longer waits for it"
		if why != nil {
			reason = why(ctx)
		}
		_ = a.send(api.AttachLine{Kind: api.AttachWithdrawn, ID: id, Reason: reason})
		return ctx.Err()
	case <-a.ctx.Done():
		return errGone
	}
}

// attachKey names one node of one session.
type attachKey struct {
	s    *session.Session
	node string
}

// attachMu guards attachGroups and every group's members.
var (
	attachMu     sync.Mutex
	attachGroups = map[attachKey]*attachGroup{}
)

// attachGroup is every attach stream of one node, attached to the session
// as one: it decides who answers each request.
//
// A request from an MCP server does not say which call it arose from, so
// the group asks in this order: each commander (a REPL), latest first, is
// offered it and takes it if its person has a call in flight — the server
// most likely asks because of that call, or of an agent that call drives;
// then the latest plain stream (`nerve mcp serve --node`), whose MCP client
// made the call otherwise; then, when no plain stream exists, the latest
// commander must answer even when idle. Nobody attached: declined.
type attachGroup struct {
	members []attachMember // in attach order; guarded by attachMu
	detach  func()
	// s and node name the node, to tell why a request was withdrawn;
	// s may be nil (tests).
	s    *session.Session
	node string
}

// joinAttachGroup adds a to node id's group, attaching the group to the
// session's hooks when it is the first; leave undoes it.
func joinAttachGroup(b *mcpserver.SessionBackend, s *session.Session, id string, a attachMember) (leave func()) {
	key := attachKey{s, id}
	attachMu.Lock()
	g := attachGroups[key]
	if g == nil {
		g = &attachGroup{s: s, node: id}
		attachGroups[key] = g
		g.detach = b.AttachNow(id, g)
	}
	g.members = append(g.members, a)
	attachMu.Unlock()
	return func() {
		attachMu.Lock()
		defer attachMu.Unlock()
		if i := slices.Index(g.members, a); i >= 0 {
			g.members = slices.Delete(g.members, i, i+1)
		}
		if len(g.members) == 0 && attachGroups[key] == g {
			delete(attachGroups, key)
			g.detach()
		}
	}
}

// route asks for a request in the order the type's comment gives.
func (g *attachGroup) route(ctx context.Context, kind, offer string, params, result any) error {
	start, ended := time.Now(), g.callsEnded()
	why := func(ctx context.Context) string { return g.withdrawnWhy(ctx, start, ended) }
	attachMu.Lock()
	var commanders, plain []attachMember
	for _, m := range slices.Backward(g.members) {
		if m.isCommander() {
			commanders = append(commanders, m)
		} else {
			plain = append(plain, m)
		}
	}
	attachMu.Unlock()
	for _, c := range commanders {
		err := c.ask(ctx, offer, params, result, why)
		if !errors.Is(err, errPassed) && !errors.Is(err, errGone) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	for _, list := range [][]attachMember{plain, commanders} {
		if len(list) > 0 {
			// Whoever waits for the answer — a graph run from `nerve
			// call` — can say where the question went.
			node.Asked(ctx, list[0].who())
			return list[0].ask(ctx, kind, params, result, why)
		}
	}
	return session.ErrNoOneToAsk
}

// callsEnded is how many calls of the node have ended so far, or -1 when
// the node is not known.
func (g *attachGroup) callsEnded() int64 {
	if g.s == nil {
		return -1
	}
	n, err := g.s.Node(g.node)
	if err != nil {
		return -1
	}
	in := n.Info()
	return in.Calls - in.InFlight
}

// withdrawnWhy says why ctx ended while a request asked at start waited,
// ended being callsEnded then. An MCP request does not say which call it
// arose from, nor does notifications/cancelled reach us with its reason,
// so this reads the circumstances: the hook's time cap is a deadline; a
// node no longer running lost its server; a call of the node that ended
// meanwhile is most likely the call the request arose from (the server
// withdraws what a cancelled call asked — and the node's call returns
// before the server even hears of the cancellation); anything else is the
// server's own decision.
func (g *attachGroup) withdrawnWhy(ctx context.Context, start time.Time, ended int64) string {
	if errors.Is(context.Cause(ctx), node.ErrCallEnded) {
		return "the call ended" // the node knows: the request came of the call
	}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		d := time.Since(start)
		if dl, ok := ctx.Deadline(); ok {
			d = dl.Sub(start)
		}
		return "timed out after " + shortDuration(d)
	}
	if g.s != nil {
		if n, err := g.s.Node(g.node); err != nil {
			return "the node was removed"
		} else if st := n.State(); st != node.Ready && st != node.Busy {
			return "its server is no longer running (" + st.String() + ")"
		}
	}
	if now := g.callsEnded(); ended >= 0 && now > ended {
		return "the call ended"
	}
	return "the server cancelled it"
}

// shortDuration is d to the second, without the zero units that
// time.Duration.String shows ("10m", not "10m0s").
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func (g *attachGroup) Sample(ctx context.Context, _ string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := g.route(ctx, api.AttachSample, api.AttachOfferSample, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (g *attachGroup) Elicit(ctx context.Context, _ string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	var res mcp.ElicitResult
	if err := g.route(ctx, api.AttachElicit, api.AttachOfferElicit, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ResourceUpdated tells every stream: each may have subscribed.
func (g *attachGroup) ResourceUpdated(uri string) {
	attachMu.Lock()
	members := slices.Clone(g.members)
	attachMu.Unlock()
	for _, m := range members {
		m.resourceUpdated(uri)
	}
}

func (d *Daemon) handleMCPAttach(w http.ResponseWriter, r *http.Request) {
	b, err := d.mcpBackend(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("node")
	s, _ := d.sessionOf(r, false)
	if _, err := s.Node(id); err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	a := newStreamAttachment(r.Context(), w, r.URL.Query().Get("as") == api.AttachAsCommander)
	a.whoIs = cut(r.URL.Query().Get(api.AttachWho), 200)
	leave := joinAttachGroup(b, s, id, a)
	defer leave()
	defer func() {
		a.mu.Lock()
		a.closed = true
		a.mu.Unlock()
		a.q.Close() // the last lines are written (or fail) before w is done
	}()
	_ = a.send(api.AttachLine{Kind: api.AttachReady})
	<-r.Context().Done()
}

func (d *Daemon) handleMCPAnswer(w http.ResponseWriter, r *http.Request) {
	var ans api.AttachAnswer
	if err := readJSON(r, &ans); err != nil {
		writeErr(w, err)
		return
	}
	v, ok := pendingAnswers.LoadAndDelete(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound,
			Message: "no request waits for this answer (it was answered, timed out or cancelled)"})
		return
	}
	v.(chan api.AttachAnswer) <- ans
	writeJSON(w, http.StatusOK, struct{}{})
}
