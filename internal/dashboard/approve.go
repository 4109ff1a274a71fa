package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Held calls (issue 32, item 4): a call the session's policy asks about
// is shown on every open page of the session as a prompt — who calls,
// which tool, the exact arguments — with the Commander's three answers:
// allow once, allow the same call for a while, deny. The daemon offers it
// (Offer) beside the calling client and the Commanders, and takes the
// first answer from anywhere; the prompt goes from every page when the
// daemon closes it, saying who answered, in how long, or that time ran
// out. An answer is a POST of the page (action: cookie, Origin, CSRF
// token) to the prompt's id, refused once the prompt is answered, gone or
// unknown.

const (
	// maxShownArgs is how much of a held call's arguments a prompt
	// shows; beyond it the prompt says how much is not shown.
	maxShownArgs = 256 << 10
	// keepClosed is how long, and maxClosed for how many prompts, an
	// answer that comes after its prompt went is refused with why.
	keepClosed = 10 * time.Minute
	maxClosed  = 256
)

// The answers a page gives (answerBody.Answer).
const (
	answerAllow    = "allow"    // allow once
	answerRemember = "remember" // allow, and the same call for session.RememberFor
	answerDeny     = "deny"
)

// prompt is a held call as the page shows it (events approval and
// approvals).
type prompt struct {
	ID     string `json:"id"`
	Node   string `json:"node"`
	Tool   string `json:"tool"`
	Caller string `json:"caller"`
	Rule   string `json:"rule,omitempty"`
	// Arguments are the arguments the tool would get, indented, as
	// shownArgs writes them.
	Arguments string `json:"arguments"`
	// Size is the arguments' length in bytes; Cut is set when Arguments
	// has only the first maxShownArgs of them.
	Size int  `json:"size"`
	Cut  bool `json:"cut,omitempty"`
	// Asked is when the call was held; Expires when it stops waiting.
	Asked   time.Time `json:"asked"`
	Expires time.Time `json:"expires,omitzero"`
	// Remember is how many minutes answerRemember allows the same call.
	Remember int `json:"remember"`
}

// promptClosed tells the pages that a prompt went, and why (event
// approval_closed).
type promptClosed struct {
	ID string `json:"id"`
	// Answered: a person answered it (here or elsewhere); else it timed
	// out or the call stopped waiting.
	Answered bool   `json:"answered,omitempty"`
	Why      string `json:"why"`
}

// approvals are the prompts on show and those closed lately.
type approvals struct {
	// mu guards the fields below. It is held while a page's answer is
	// handed to the daemon (waiting.answer), which takes no lock of ours.
	mu     sync.Mutex
	open   map[string]*waiting
	closed map[string]closedPrompt
}

// waiting is a prompt on show.
type waiting struct {
	session string
	view    prompt
	answer  func(session.Approval) bool
	// taken: a page's answer was the first; the prompt goes when the
	// daemon closes it.
	taken bool
}

// closedPrompt is a prompt that went: why, for an answer that comes late.
type closedPrompt struct {
	session  string
	answered bool
	why      string
	at       time.Time
}

func newApprovals() *approvals {
	return &approvals{open: map[string]*waiting{}, closed: map[string]closedPrompt{}}
}

// Offer shows req, a call of session name held for a person, on the
// session's pages until close is called — and on pages that open
// meanwhile. expires is when the call stops waiting (zero: unknown).
// answer takes a page's answer, By unset, and reports whether it was the
// first of all; close tells the pages why the prompt went (answered: a
// person decided, here or elsewhere) and is safe to call twice.
func (d *Dashboard) Offer(name string, req *session.ApprovalRequest, expires time.Time, answer func(session.Approval) bool) (close func(answered bool, why string)) {
	args, cut := shownArgs(req.Arguments)
	caller := "a program"
	if req.Caller.Kind != "" {
		caller = req.Caller.String()
	}
	p := prompt{
		ID: random()[:32], Node: req.Node, Tool: req.Tool, Caller: caller, Rule: req.Rule,
		Arguments: args, Size: len(req.Arguments), Cut: cut,
		Asked: time.Now(), Expires: expires, Remember: int(session.RememberFor / time.Minute),
	}
	a := d.asks
	a.mu.Lock()
	a.open[p.ID] = &waiting{session: name, view: p, answer: answer}
	a.mu.Unlock()
	d.calls.notify(name, "approval", p)
	var once sync.Once
	return func(answered bool, why string) {
		once.Do(func() {
			now := time.Now()
			a.mu.Lock()
			delete(a.open, p.ID)
			a.pruneLocked(now)
			dropOldest(a.closed, maxClosed-1, func(c closedPrompt) time.Time { return c.at })
			a.closed[p.ID] = closedPrompt{session: name, answered: answered, why: why, at: now}
			a.mu.Unlock()
			d.calls.notify(name, "approval_closed", promptClosed{ID: p.ID, Answered: answered, Why: why})
		})
	}
}

// Watched reports whether a page of session name is open (its event
// stream is): a person may be there to answer.
func (d *Dashboard) Watched(name string) bool {
	return d.calls.listening(name)
}

func (a *approvals) pruneLocked(now time.Time) {
	syncs.AssertLocked(&a.mu)
	for id, c := range a.closed {
		if now.Sub(c.at) > keepClosed {
			delete(a.closed, id)
		}
	}
}

// snapshot returns the prompts on show for session name, oldest first.
func (a *approvals) snapshot(name string) []prompt {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []prompt{}
	for _, w := range a.open {
		if w.session == name {
			out = append(out, w.view)
		}
	}
	// Few at a time: a sort by insertion is enough.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Asked.Before(out[j-1].Asked); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// answerBody is a page's answer to a prompt.
type answerBody struct {
	Answer string `json:"answer"`
}

// handleAnswer takes a page's answer to prompt {id} of the session.
func (d *Dashboard) handleAnswer(w http.ResponseWriter, r *http.Request) error {
	var body answerBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return withStatus(http.StatusBadRequest, `send {"answer": "allow"|"remember"|"deny"}: %v`, err)
	}
	var ans session.Approval
	switch body.Answer {
	case answerAllow:
		ans.Allow = true
	case answerRemember:
		ans.Allow, ans.Remember = true, true
	case answerDeny:
		ans.Reason = "denied on the dashboard"
	default:
		return withStatus(http.StatusBadRequest, "the answer is %q, %q or %q, not %q", answerAllow, answerRemember, answerDeny, body.Answer)
	}
	name, id := r.PathValue("session"), r.PathValue("id")
	a := d.asks
	a.mu.Lock()
	defer a.mu.Unlock()
	wt := a.open[id]
	if wt == nil || wt.session != name {
		if c, ok := a.closed[id]; ok && c.session == name {
			if c.answered {
				return withStatus(http.StatusConflict, "this call was answered already (%s)", c.why)
			}
			return withStatus(http.StatusGone, "this call no longer waits for an answer (%s)", c.why)
		}
		return withStatus(http.StatusNotFound, "no call of session %q waits for an answer with id %q: it may have been answered long ago; reload the page", name, id)
	}
	if wt.taken || !wt.answer(ans) {
		return withStatus(http.StatusConflict, "this call was answered already, or stopped waiting, just now")
	}
	wt.taken = true
	writeJSON(w, http.StatusOK, map[string]string{"answer": body.Answer})
	return nil
}

// shownArgs is a held call's arguments as its prompt shows them:
// indented, every value as the tool gets it — numbers as written, keys
// in their order, a key given twice shown twice — with strings written
// plainly (`a > b`, not Go's `a \u003e b`: a person must read what a
// command does) and every character that does not show as itself —
// controls, format characters such as bidi overrides and zero widths,
// spaces other than U+0020 — written as its JSON escape, which reads as
// the same string: the person sees all that the tool gets. At most
// maxShownArgs; cut reports that more was not shown. Arguments that are
// not JSON (never sent by the session) show as they are, escaped alike.
func shownArgs(raw json.RawMessage) (text string, cut bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}", false
	}
	src, err := indent(raw)
	if err != nil {
		src = raw
	}
	var out strings.Builder
	for len(src) > 0 {
		if out.Len() >= maxShownArgs {
			return out.String(), true
		}
		r, n := utf8.DecodeRune(src)
		switch {
		case r == utf8.RuneError && n == 1:
			out.WriteString(`\ufffd`)
		case r == '\n' || unicode.IsPrint(r):
			out.Write(src[:n])
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
		src = src[n:]
	}
	return out.String(), false
}

// indent writes the JSON value raw indented by two spaces, from
// encoding/json's tokens: numbers as their literal, strings encoded anew
// without HTML escapes.
func indent(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	str := json.NewEncoder(&b)
	str.SetEscapeHTML(false)
	// open are the containers the next token is in: an object's n counts
	// its keys and values, an array's its elements.
	type container struct {
		object bool
		n      int
	}
	var open []container
	newline := func() {
		b.WriteByte('\n')
		for range open {
			b.WriteString("  ")
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return b.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			c := open[len(open)-1]
			open = open[:len(open)-1]
			if c.n > 0 {
				newline()
			}
			b.WriteByte(byte(d))
			continue
		}
		key := false
		if len(open) > 0 {
			c := &open[len(open)-1]
			key = c.object && c.n%2 == 0
			if key || !c.object {
				if c.n > 0 {
					b.WriteByte(',')
				}
				newline()
			}
			c.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			open = append(open, container{object: v == '{'})
		case json.Number:
			b.WriteString(string(v))
		case string:
			_ = str.Encode(v)       // a string always encodes
			b.Truncate(b.Len() - 1) // Encode's newline
			if key {
				b.WriteString(": ")
			}
		case bool:
			fmt.Fprint(&b, v)
		case nil:
			b.WriteString("null")
		}
	}
}
