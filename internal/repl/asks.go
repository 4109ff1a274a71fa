package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
)

// Requests from servers (issue 4 item 7): the REPL attaches to every mcp
// node of its session, so a server's sampling and elicitation requests are
// asked of the person here. The daemon offers a request to the REPL first;
// the REPL takes it while a call of its own is in flight (the server asks
// because of that call) and passes it on otherwise, unless nobody else is
// attached — then it must answer, and asks at once even at an idle prompt.

// ask is one request from a server waiting for the person.
type ask struct {
	node   string
	id     string // the daemon's request id
	kind   string // api.AttachSample or api.AttachElicit
	params json.RawMessage
	// reply receives the person's answer once.
	reply chan askAnswer
	// ctx ends when the request is withdrawn (its cause a *withdrawal)
	// or the REPL ends; a dialog waiting on something else watches it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// state is where the request is; guarded by asker.mu.
	state askState
}

// askState is where a request is on its way through the REPL.
type askState int

const (
	askNew      askState = iota // arrived; not queued yet (an offer being decided)
	askQueued                   // waiting for the person
	askShowing                  // its dialog is on screen
	askAnswered                 // the person answered; the answer is on its way
)

func newAsk(ctx context.Context, node string, line api.AttachLine) *ask {
	q := &ask{node: node, id: line.ID, kind: line.Kind, params: line.Params, reply: make(chan askAnswer, 1)}
	q.ctx, q.cancel = context.WithCancelCause(ctx)
	return q
}

// withdrawal is a request the server withdrew: its call ended, the server
// cancelled it, or it timed out.
type withdrawal struct{ node, why string }

func (w *withdrawal) Error() string {
	return fmt.Sprintf("@%s withdrew its request: %s", w.node, w.why)
}

// withdrawn returns the withdrawal when the server withdrew q, else nil.
func (q *ask) withdrawn() *withdrawal {
	var w *withdrawal
	if errors.As(context.Cause(q.ctx), &w) {
		return w
	}
	return nil
}

// askAnswer is a result to send back, or err to decline with.
type askAnswer struct {
	result any
	err    error
}

// withdrawnNotice is the line that tells the person a request is gone.
func (k *asker) withdrawnNotice(w *withdrawal) string {
	if k.r == nil {
		return "! " + w.Error()
	}
	return paint(k.r.style, k.r.style.Yellow, "! "+w.Error())
}

// asker keeps the REPL's attachments and the queue of requests waiting
// for the person.
type asker struct {
	r     *repl
	ctx   context.Context // the REPL's; cancelled when it ends
	stop  context.CancelFunc
	wg    sync.WaitGroup
	ready chan struct{} // a request was queued (capacity 1)
	wake  func()        // interrupts an idle Readline; nil: cannot

	// mu guards the fields below.
	mu       sync.Mutex
	attached map[string]*client.Attachment
	queue    []*ask
	pending  map[askKey]*ask // every request not yet answered or passed
	showing  *ask            // the request whose dialog is on screen
	calling  int             // calls in flight from this REPL
	reading  bool            // a Readline (the prompt's or a dialog's) waits for the person
	readAsk  *ask            // the request whose dialog's Readline it is; nil: the prompt's
	woken    bool            // wake was called during the current Readline
	stray    int             // wake-ups that arrived after their Readline returned
}

// askKey names one request of one node.
type askKey struct{ node, id string }

func newAsker(ctx context.Context, r *repl) *asker {
	actx, stop := context.WithCancel(ctx)
	return &asker{r: r, ctx: actx, stop: stop, ready: make(chan struct{}, 1), attached: map[string]*client.Attachment{}, pending: map[askKey]*ask{}}
}

// close detaches, declines what is still waiting and waits for every
// goroutine the asker started.
func (k *asker) close() {
	k.stop()
	k.mu.Lock()
	for id, a := range k.attached {
		a.Close()
		delete(k.attached, id)
	}
	k.mu.Unlock()
	k.wg.Wait()
}

// sync attaches to every mcp node of the session not attached yet and
// detaches from nodes that are gone. The watch goroutine calls it.
func (k *asker) sync(ctx context.Context) {
	infos, err := k.r.session.Nodes(ctx)
	if err != nil {
		return
	}
	present := map[string]bool{}
	for _, in := range infos {
		// Every node: an mcp server's requests and a graph's ask steps
		// come to the Commander, and so do the approvals the session's
		// call policy asks for (any node's stream carries them), which
		// must reach a Commander on a session of bash and llm nodes too.
		present[in.ID] = true
		k.mu.Lock()
		_, ok := k.attached[in.ID]
		k.mu.Unlock()
		if ok || k.ctx.Err() != nil {
			continue
		}
		a, err := k.r.session.AttachCommander(k.ctx, in.ID, whoAmI())
		if err != nil {
			continue // removed meanwhile, or an old daemon: the next event retries
		}
		k.mu.Lock()
		if k.ctx.Err() != nil {
			k.mu.Unlock()
			a.Close()
			return
		}
		k.attached[in.ID] = a
		k.mu.Unlock()
		k.wg.Go(func() { k.read(in.ID, a) })
	}
	k.mu.Lock()
	for id, a := range k.attached {
		if !present[id] {
			a.Close()
			delete(k.attached, id)
		}
	}
	k.mu.Unlock()
}

// read serves one attachment's lines until it is closed or its stream
// ends (the next sync attaches again).
func (k *asker) read(id string, a *client.Attachment) {
	defer func() {
		k.mu.Lock()
		if k.attached[id] == a {
			delete(k.attached, id)
		}
		k.mu.Unlock()
		a.Close()
	}()
	for {
		line, err := a.Next()
		if err != nil {
			return
		}
		switch line.Kind {
		case api.AttachSample, api.AttachElicit, api.AttachOfferSample, api.AttachOfferElicit:
			// Known before serve runs, so that a withdrawal on the next
			// line finds it.
			q := k.arrive(id, line)
			k.wg.Go(func() { k.serve(a, q) })
		case api.AttachWithdrawn:
			k.withdraw(id, line.ID, line.Reason)
		}
	}
}

// arrive registers a request that came on node id's stream.
func (k *asker) arrive(id string, line api.AttachLine) *ask {
	q := newAsk(k.ctx, id, line)
	k.mu.Lock()
	k.pending[askKey{id, line.ID}] = q
	k.mu.Unlock()
	return q
}

// serve gets the person's answer to one request and sends it back.
func (k *asker) serve(a *client.Attachment, q *ask) {
	defer func() {
		k.mu.Lock()
		delete(k.pending, askKey{q.node, q.id})
		k.mu.Unlock()
		q.cancel(nil)
	}()
	switch q.kind {
	case api.AttachOfferSample, api.AttachOfferElicit:
		k.mu.Lock()
		calling := k.calling > 0
		k.mu.Unlock()
		if !calling {
			_ = a.Answer(k.ctx, q.id, nil, errors.New(api.AttachPass))
			return
		}
		q.kind = map[string]string{api.AttachOfferSample: api.AttachSample, api.AttachOfferElicit: api.AttachElicit}[q.kind]
	}
	if !k.enqueue(q) {
		return // withdrawn before it could be queued
	}
	var ans askAnswer
	select {
	case ans = <-q.reply:
	case <-q.ctx.Done():
		if q.withdrawn() != nil {
			return // nobody waits for an answer
		}
		ans = declined(q.kind, "the person left the Commander")
	}
	if q.withdrawn() != nil {
		return
	}
	// The answer must reach the daemon even when the REPL is ending.
	actx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), 5*time.Second)
	defer cancel()
	if err := a.Answer(actx, q.id, ans.result, ans.err); err != nil && k.ctx.Err() == nil {
		// Refused most likely because the request was withdrawn just as
		// the person answered: its withdrawal line is on its way and says
		// it better.
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-q.ctx.Done():
		case <-t.C:
		}
		if q.withdrawn() == nil && k.r != nil {
			k.r.notice(paint(k.r.style, k.r.style.Yellow, fmt.Sprintf("! @%s no longer waits for that answer (%v)", q.node, err)))
		}
	}
}

// withdraw ends request reqID of node id: dropped from the queue with a
// notice, or its dialog ended (by a Ctrl-C of our own when the person is
// typing); a request already answered gets the notice too — the answer
// was not used.
func (k *asker) withdraw(id, reqID, why string) {
	if why == "" {
		why = "the server no longer waits for it"
	}
	k.mu.Lock()
	q := k.pending[askKey{id, reqID}]
	if q == nil || q.withdrawn() != nil {
		k.mu.Unlock()
		return
	}
	w := &withdrawal{node: id, why: why}
	q.cancel(w)
	tell := false
	switch q.state {
	case askQueued:
		if i := slices.Index(k.queue, q); i >= 0 {
			k.queue = slices.Delete(k.queue, i, i+1)
		}
		tell = true
	case askShowing:
		// The dialog tells the person when it ends.
		if k.reading && k.readAsk == q && !k.woken && k.wake != nil {
			k.woken = true
			k.wake()
		}
	case askAnswered:
		tell = true
	}
	k.mu.Unlock()
	if tell && k.r != nil {
		k.r.notice(k.withdrawnNotice(w))
	}
}

// declined is the answer to a request the person declined: an error for
// sampling (the protocol has no decline), action "decline" for elicitation.
func declined(kind, why string) askAnswer {
	if kind == api.AttachElicit {
		return askAnswer{result: elicitDecline()}
	}
	return askAnswer{err: fmt.Errorf("the user declined the sampling request (%s)", why)}
}

// enqueue queues q for the person and wakes the prompt if it waits; it
// reports false when q was withdrawn before it could be queued.
func (k *asker) enqueue(q *ask) bool {
	k.mu.Lock()
	if q.withdrawn() != nil {
		k.mu.Unlock()
		if k.r != nil {
			// It never showed; one line says it is gone.
			k.r.notice(k.withdrawnNotice(q.withdrawn()))
		}
		return false
	}
	q.state = askQueued
	k.queue = append(k.queue, q)
	if k.reading && k.readAsk == nil && !k.woken && k.wake != nil {
		k.woken = true
		k.wake()
	}
	k.mu.Unlock()
	select {
	case k.ready <- struct{}{}:
	default:
	}
	return true
}

// take returns the next waiting request, now showing, or nil.
func (k *asker) take() *ask {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.queue) == 0 {
		return nil
	}
	q := k.queue[0]
	k.queue = k.queue[1:]
	q.state = askShowing
	k.showing = q
	return q
}

// answered marks q's dialog over.
func (k *asker) answered(q *ask) {
	k.mu.Lock()
	q.state = askAnswered
	if k.showing == q {
		k.showing = nil
	}
	k.mu.Unlock()
}

// answering reports whether the person is answering a request.
func (k *asker) answering() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.showing != nil
}

// beginCall and endCall bracket a call of this REPL: requests offered
// meanwhile are taken, not passed on.
func (k *asker) beginCall() {
	k.mu.Lock()
	k.calling++
	k.mu.Unlock()
}

func (k *asker) endCall() {
	k.mu.Lock()
	k.calling--
	k.mu.Unlock()
}

// beginRead and endRead bracket the prompt's Readline. endRead reports
// whether an interrupt that ended it was a wake-up rather than Ctrl-C.
func (k *asker) beginRead() {
	k.mu.Lock()
	k.reading = true
	k.readAsk = nil
	k.mu.Unlock()
}

// beginAskRead is beginRead for a Readline of q's dialog (q may be nil:
// none); it reports false, reading nothing, when q was withdrawn.
func (k *asker) beginAskRead(q *ask) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if q != nil && q.withdrawn() != nil {
		return false
	}
	k.reading = true
	k.readAsk = q
	return true
}

func (k *asker) endRead(interrupted bool) (wakeUp bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reading = false
	k.readAsk = nil
	woken := k.woken
	k.woken = false
	switch {
	case interrupted && woken:
		return true
	case woken:
		// The line ended before the wake-up was read: it will end the
		// next Readline, which must not take it for Ctrl-C.
		k.stray++
	case interrupted && k.stray > 0:
		k.stray--
		return true
	}
	return false
}

// answerWaiting asks the person every waiting request, in order.
func (r *repl) answerWaiting(ctx context.Context) {
	for q := r.asks.take(); q != nil; q = r.asks.take() {
		ans := r.answerAsk(ctx, q)
		r.asks.answered(q)
		q.reply <- ans
	}
}

// answerAsk runs the dialog for one request. When the server withdraws
// the request meanwhile, the dialog ends at once and says so.
func (r *repl) answerAsk(ctx context.Context, q *ask) askAnswer {
	var ans askAnswer
	switch q.kind {
	case api.AttachSample:
		ans = r.answerSample(ctx, q)
	case api.AttachElicit:
		ans = r.answerElicit(ctx, q)
	default:
		ans = declined(q.kind, "unknown request")
	}
	if w := q.withdrawn(); w != nil {
		fmt.Fprintln(r.out, r.asks.withdrawnNotice(w))
	}
	return ans
}

// currentAsk is the request whose dialog is on screen, or nil.
func (r *repl) currentAsk() *ask {
	if r.asks == nil {
		return nil
	}
	r.asks.mu.Lock()
	defer r.asks.mu.Unlock()
	return r.asks.showing
}

// answerCompleter is the REPL's completer, silent while the person
// answers a request: node ids and commands are no answer to a server, and
// Tab then inserts nothing.
type answerCompleter struct {
	k     *asker
	inner readline.AutoCompleter
}

func (c *answerCompleter) Do(line []rune, pos int) ([][]rune, int) {
	if c.k.answering() {
		return nil, 0
	}
	return c.inner.Do(line, pos)
}

// wakeReader is the REPL's stdin: it passes the terminal's bytes to
// readline and can add a Ctrl-C of its own, which ends a pending Readline
// so that a request from a server is asked at once. (readline's WriteStdin
// cannot: its buffer is read only after the next key.)
type wakeReader struct {
	src  io.Reader
	once sync.Once
	data chan []byte
	errc chan error
	kick chan struct{}
	done chan struct{}
	rest []byte
	shut sync.Once
}

func newWakeReader(src io.Reader) *wakeReader {
	return &wakeReader{src: src, data: make(chan []byte), errc: make(chan error, 1), kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// pump copies the terminal to data. It ends when Close was called and the
// read it is blocked in returns: a read of a terminal cannot be cancelled.
func (w *wakeReader) pump() {
	for {
		buf := make([]byte, 4096)
		n, err := w.src.Read(buf)
		if n > 0 {
			select {
			case w.data <- buf[:n]:
			case <-w.done:
				return
			}
		}
		if err != nil {
			w.errc <- err
			return
		}
	}
}

func (w *wakeReader) Read(p []byte) (int, error) {
	w.once.Do(func() { go w.pump() })
	if len(w.rest) > 0 {
		n := copy(p, w.rest)
		w.rest = w.rest[n:]
		return n, nil
	}
	select {
	case b := <-w.data:
		n := copy(p, b)
		w.rest = b[n:]
		return n, nil
	case <-w.kick:
		p[0] = 3 // Ctrl-C: readline returns ErrInterrupt with the line typed so far
		return 1, nil
	case err := <-w.errc:
		return 0, err
	case <-w.done:
		return 0, io.EOF
	}
}

// Wake makes the next Read return a Ctrl-C.
func (w *wakeReader) Wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close ends Read; safe twice.
func (w *wakeReader) Close() error {
	w.shut.Do(func() { close(w.done) })
	return nil
}

// whoAmI says which Commander this is, for a caller whose question it is
// asked (`nerve call` of a graph with an ask: step): "pid 4242 on
// /dev/pts/3", the terminal where /proc tells it.
func whoAmI() string {
	who := "pid " + strconv.Itoa(os.Getpid())
	if tty, err := os.Readlink("/proc/self/fd/0"); err == nil && strings.HasPrefix(tty, "/dev/") {
		who += " on " + tty
	}
	return who
}
