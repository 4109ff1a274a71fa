package mcpnode

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/nerve-dev/nerve/internal/backoff"
)

// Retries of a request a remote server turned away (429, 503): it did not
// process it, so sending it again is safe. Bounded: retryTries in all, each
// wait at most retryMaxWait and never past the request's deadline.
const (
	retryTries   = 3
	retryMaxWait = 10 * time.Second
)

// retryWait is the wait before each retry when the server names no
// Retry-After: 250 ms, then doubled.
var retryWait = backoff.Backoff{Base: 250 * time.Millisecond}

// StatusError is the error of a request a remote server kept turning away
// with 429 Too Many Requests or 503 Service Unavailable after nerve's
// retries. Errors of calls that ended so wrap it.
type StatusError struct {
	Status     int           // the last status
	Tries      int           // requests sent
	RetryAfter time.Duration // the server's last Retry-After, 0 if none
	// TooLong: the server asked to wait longer than nerve may (beyond
	// retryMaxWait or the request's deadline), so nerve stopped early.
	TooLong bool
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("the server answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	switch {
	case e.TooLong:
		msg += fmt.Sprintf(" and asked to wait %v (Retry-After), longer than nerve waits within one call; try again later", e.RetryAfter)
	case e.Tries > 1:
		msg += fmt.Sprintf(" %d times in a row (nerve retried, as it did not process the request); try again later", e.Tries)
	}
	if e.Status == http.StatusTooManyRequests {
		msg += " — the server limits how often it may be called"
	} else {
		msg += " — the server is overloaded or down for maintenance"
	}
	return msg
}

// retryTransport sends a POST again when the server answers 429 or 503.
// Other methods pass through: the SDK retries its GET stream itself.
type retryTransport struct {
	base http.RoundTripper
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || (req.Body != nil && req.GetBody == nil) {
		return t.base.RoundTrip(req)
	}
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
		resp, err := t.base.RoundTrip(r)
		if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
			return resp, err
		}
		after, named := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		serr := &StatusError{Status: resp.StatusCode, Tries: try, RetryAfter: after}
		if try == retryTries {
			return nil, serr
		}
		d := retryWait.Delay(try - 1)
		if named {
			d = after
		}
		if dl, ok := ctx.Deadline(); (ok && time.Now().Add(d).After(dl)) || d > retryMaxWait {
			serr.TooLong = named
			return nil, serr
		}
		if backoff.Sleep(ctx, d) != nil {
			return nil, fmt.Errorf("%w (while waiting to retry after HTTP %d)", context.Cause(ctx), resp.StatusCode)
		}
	}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
