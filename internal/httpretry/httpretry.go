// Package httpretry is nerve's one HTTP retry: which answers are worth
// sending a request again for (429, 502, 503, 504 by default), how long
// to wait before each try — what the server's Retry-After asks (seconds
// or an HTTP date), up to a cap, else a backoff with jitter
// (internal/backoff) — how many tries in all, and which requests may be
// sent again at all.
//
// The mcp node sends its requests through a Transport; the llm providers,
// which also retry lost connections and errors inside a stream, ask a
// Policy the same questions in their own loop. Tests run it in
// testing/synctest bubbles, as internal/backoff's. It imports only
// internal/backoff.
package httpretry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/nerve-dev/nerve/internal/backoff"
)

// Defaults of a Policy's zero fields.
const (
	DefaultAttempts = 3                      // tries in all, the first included
	DefaultBase     = 250 * time.Millisecond // the first wait the server did not time
	DefaultMax      = 10 * time.Second       // the longest wait, Retry-After included
)

// jitter spreads each wait nerve chooses by ±25 %, so that clients turned
// away together do not come back together. A wait the server asked for
// is kept as asked.
const jitter = 0.25

// DefaultStatuses are the answers worth another try: the server said it
// did not process the request (429 Too Many Requests, 503 Service
// Unavailable), or a gateway in front of it failed (502 Bad Gateway, 504
// Gateway Timeout).
var DefaultStatuses = []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// Policy says when and how often to try a request again. The zero value
// is the defaults.
type Policy struct {
	// Attempts is how many tries in all, the first included; 0 means
	// DefaultAttempts, 1 never retries.
	Attempts int
	// Base is the wait before the first retry when the server names none;
	// each later one doubles. 0 means DefaultBase.
	Base time.Duration
	// Max caps every wait. A server whose Retry-After asks for longer is
	// not waited for: the caller reports its answer. 0 means DefaultMax.
	Max time.Duration
	// Statuses are the answers worth another try; nil means
	// DefaultStatuses.
	Statuses []int
}

// Tries returns how many tries in all the policy allows.
func (p Policy) Tries() int {
	if p.Attempts <= 0 {
		return DefaultAttempts
	}
	return p.Attempts
}

func (p Policy) base() time.Duration {
	if p.Base <= 0 {
		return DefaultBase
	}
	return p.Base
}

func (p Policy) max() time.Duration {
	if p.Max <= 0 {
		return DefaultMax
	}
	return p.Max
}

// Retryable reports whether an answer with status is worth another try.
func (p Policy) Retryable(status int) bool {
	if p.Statuses == nil {
		return slices.Contains(DefaultStatuses, status)
	}
	return slices.Contains(p.Statuses, status)
}

// Wait returns how long to wait before retry n (0 is the first): what the
// server asked for when it named a time (retryAfter, named; 0 is "at
// once"), else Base·2ⁿ spread by ±25 %, never over Max. ok is false when
// the server asked for longer than Max.
func (p Policy) Wait(n int, retryAfter time.Duration, named bool) (d time.Duration, ok bool) {
	if named {
		return retryAfter, retryAfter <= p.max()
	}
	b := backoff.Backoff{Base: p.base(), Max: p.max(), Jitter: jitter}
	return min(b.Delay(n), p.max()), true
}

// RetryAfter reads how long an answer asks to wait: Retry-After-Ms (the
// milliseconds OpenAI and Azure send), else Retry-After in seconds or as
// an HTTP date (RFC 9110 §10.2.3); a date in the past is 0. named is
// false when neither header holds a time.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, named bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// StatusError is a request that kept getting an answer the policy
// retries, or one nerve would not send again.
type StatusError struct {
	Status     int           // the last answer's status
	Tries      int           // requests sent
	RetryAfter time.Duration // the last Retry-After, 0 if none
	// TooLong: the server asked to wait longer than nerve may (over the
	// policy's Max, or past the request's deadline), so it stopped early.
	TooLong bool
	// NotResent: the request may have run (a gateway failed after the
	// server got it) and is not safe to repeat, so it was sent once.
	NotResent bool
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("the server answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	switch {
	case e.NotResent:
		msg += "; nerve did not send it again, as it may have run (check before you repeat it)"
	case e.TooLong:
		msg += fmt.Sprintf(" and asked to wait %v (Retry-After), longer than nerve waits; try again later", e.RetryAfter)
	case e.Tries > 1:
		msg += fmt.Sprintf(" %d times in a row (nerve sent it again and waited between tries); try again later", e.Tries)
	}
	switch e.Status {
	case http.StatusTooManyRequests:
		msg += " — the server limits how often it may be called"
	case http.StatusServiceUnavailable:
		msg += " — the server is overloaded or down for maintenance"
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		msg += " — a gateway in front of the server could not get its answer"
	}
	return msg
}

// NotProcessed reports whether an answer with status says the server did
// not process the request, so that sending it again is safe whatever it
// does: 429 (RFC 6585 §4) and 503 (RFC 9110 §15.6.4).
func NotProcessed(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// Idempotent reports whether req's method is idempotent (RFC 9110
// §9.2.2): sending it twice has the effect of sending it once.
func Idempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// DefaultResend is the rule for sending a request again after a
// retryable answer: any request the server did not process (429, 503),
// otherwise only an idempotent one — a 502 or 504 comes from a gateway
// that cannot say whether the server ran it.
func DefaultResend(req *http.Request, status int) bool {
	return NotProcessed(status) || Idempotent(req)
}

// Transport sends a request again when its answer is one the Policy
// retries, Resend allows it, its body can be read again, and the wait
// fits before the request's deadline.
type Transport struct {
	// Base sends each try; nil means http.DefaultTransport.
	Base   http.RoundTripper
	Policy Policy
	// Resend says whether req, answered with status, may be sent again;
	// nil means DefaultResend.
	Resend func(req *http.Request, status int) bool
}

// RoundTrip implements http.RoundTripper. An answer the policy does not
// retry comes back as it came, as does one to a request whose body cannot
// be read again. One it retries that nerve gives up on — tries spent, a
// wait too long, a request Resend will not send again — becomes a
// *StatusError: the caller learns why it was not answered.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resend := t.Resend
	if resend == nil {
		resend = DefaultResend
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	ctx := req.Context()
	for try := 1; ; try++ {
		r := req
		if try > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("sending the request again: %w", err)
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		resp, err := base.RoundTrip(r)
		if err != nil || !t.Policy.Retryable(resp.StatusCode) || !replayable {
			return resp, err
		}
		after, named := RetryAfter(resp.Header, time.Now())
		serr := &StatusError{Status: resp.StatusCode, Tries: try, RetryAfter: after}
		drain(resp)
		if !resend(req, resp.StatusCode) {
			serr.NotResent = !NotProcessed(resp.StatusCode)
			return nil, serr
		}
		if try >= t.Policy.Tries() {
			return nil, serr
		}
		d, ok := t.Policy.Wait(try-1, after, named)
		if dl, has := ctx.Deadline(); !ok || (has && time.Now().Add(d).After(dl)) {
			serr.TooLong = named
			return nil, serr
		}
		if err := backoff.Sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("%w (while waiting to send the request again after HTTP %d)", context.Cause(ctx), serr.Status)
		}
	}
}

// drain reads a little of an answer that is dropped, so that its
// connection can be used again.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
