package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

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
	kind   string // api.AttachSample or api.AttachElicit
	params json.RawMessage
	// reply receives the person's answer once.
	reply chan askAnswer
}

// askAnswer is a result to send back, or err to decline with.
type askAnswer struct {
	result any
	err    error
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
	calling  int  // calls in flight from this REPL
	reading  bool // the prompt's Readline is waiting for the person
	woken    bool // wake was called during the current Readline
	stray    int  // wake-ups that arrived after their Readline returned
}

func newAsker(ctx context.Context, r *repl) *asker {
	actx, stop := context.WithCancel(ctx)
	return &asker{r: r, ctx: actx, stop: stop, ready: make(chan struct{}, 1), attached: map[string]*client.Attachment{}}
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
		if in.Kind != "mcp" {
			continue
		}
		present[in.ID] = true
		k.mu.Lock()
		_, ok := k.attached[in.ID]
		k.mu.Unlock()
		if ok || k.ctx.Err() != nil {
			continue
		}
		a, err := k.r.session.AttachCommander(k.ctx, in.ID)
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
			k.wg.Go(func() { k.serve(id, a, line) })
		}
	}
}

// serve gets the person's answer to one request and sends it back.
func (k *asker) serve(id string, a *client.Attachment, line api.AttachLine) {
	kind := line.Kind
	switch kind {
	case api.AttachOfferSample, api.AttachOfferElicit:
		k.mu.Lock()
		calling := k.calling > 0
		k.mu.Unlock()
		if !calling {
			_ = a.Answer(k.ctx, line.ID, nil, errors.New(api.AttachPass))
			return
		}
		kind = map[string]string{api.AttachOfferSample: api.AttachSample, api.AttachOfferElicit: api.AttachElicit}[kind]
	}
	q := &ask{node: id, kind: kind, params: line.Params, reply: make(chan askAnswer, 1)}
	k.enqueue(q)
	var ans askAnswer
	select {
	case ans = <-q.reply:
	case <-k.ctx.Done():
		ans = declined(kind, "the person left the Commander")
	}
	// The answer must reach the daemon even when the REPL is ending.
	actx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), 5*time.Second)
	defer cancel()
	if err := a.Answer(actx, line.ID, ans.result, ans.err); err != nil && k.ctx.Err() == nil {
		k.r.notice(paint(k.r.style, k.r.style.Yellow, fmt.Sprintf("! @%s no longer waits for that answer (%v)", id, err)))
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

func (k *asker) enqueue(q *ask) {
	k.mu.Lock()
	k.queue = append(k.queue, q)
	if k.reading && !k.woken && k.wake != nil {
		k.woken = true
		k.wake()
	}
	k.mu.Unlock()
	select {
	case k.ready <- struct{}{}:
	default:
	}
}

// take returns the next waiting request, or nil.
func (k *asker) take() *ask {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.queue) == 0 {
		return nil
	}
	q := k.queue[0]
	k.queue = k.queue[1:]
	return q
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
	k.mu.Unlock()
}

func (k *asker) endRead(interrupted bool) (wakeUp bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reading = false
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
		q.reply <- r.answerAsk(ctx, q)
	}
}

// answerAsk runs the dialog for one request.
func (r *repl) answerAsk(ctx context.Context, q *ask) askAnswer {
	switch q.kind {
	case api.AttachSample:
		return r.answerSample(ctx, q)
	case api.AttachElicit:
		return r.answerElicit(ctx, q)
	}
	return declined(q.kind, "unknown request")
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
