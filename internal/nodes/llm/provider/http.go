package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/nerve-dev/nerve/internal/httpretry"
	"github.com/nerve-dev/nerve/internal/telemetry"
)

// endpoint is one API URL and the HTTP plumbing every dialect shares:
// sending a JSON body, turning error statuses into *StatusError and
// transport failures into *transportError, bounding each request by
// Config.Timeout.
type endpoint struct {
	cfg      *Config
	provider string // "openai", "anthropic": chooses the advice in errors
	url      string
	display  string // url without its query or user info, for messages
}

// newEndpoint joins cfg.BaseURL and the dialect's path (addPath gets the
// base URL's path and returns the full one).
func newEndpoint(cfg *Config, provider string, addPath func(string) string) endpoint {
	ep := endpoint{cfg: cfg, provider: provider, url: cfg.BaseURL, display: cfg.BaseURL}
	if u, err := url.Parse(cfg.BaseURL); err == nil {
		u.Path = addPath(u.Path)
		u.RawPath = ""
		ep.url = u.String()
		if u.RawQuery != "" {
			u.RawQuery = "…"
		}
		u.User = nil
		ep.display = u.String()
	}
	return ep
}

// post sends body and hands a 2xx answer to read. setHeaders adds the
// dialect's headers; Config.Headers are set last, so they override.
func (ep *endpoint) post(ctx context.Context, body []byte, setHeaders func(http.Header), read func(*http.Response) (*Response, error)) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, ep.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request to %s: %w (check --base-url)", ep.display, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if ep.cfg.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	setHeaders(hreq.Header)
	for k, v := range ep.cfg.Headers {
		hreq.Header.Set(k, v)
	}
	telemetry.InjectHeader(ctx, hreq.Header) // the chat span's trace context
	resp, err := ep.cfg.HTTPClient.Do(hreq)
	if err != nil {
		// *url.Error repeats the full URL, which may carry a key in its
		// query (Gemini's ?key=); say which endpoint with ep.display.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("no answer from %s within %v (raise --timeout): %w", ep.display, ep.cfg.Timeout, err)
		}
		return nil, &transportError{fmt.Errorf("sending the request to %s: %w (is the server running?)", ep.display, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		after, named := httpretry.RetryAfter(resp.Header, time.Now())
		return nil, &StatusError{Status: resp.StatusCode, Message: errorMessage(b), URL: ep.display, RetryAfter: after, retryNamed: named, Provider: ep.provider}
	}
	res, err := read(resp)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("the answer from %s took over %v (raise --timeout): %w", ep.display, ep.cfg.Timeout, err)
		}
		return nil, err
	}
	return res, nil
}

// withRetries runs once until it succeeds, retrying 429/529/5xx answers
// and lost connections with exponential backoff (honouring Retry-After)
// as long as nothing has streamed yet: text already shown cannot be taken
// back.
func withRetries(ctx context.Context, cfg *Config, onDelta func(Delta), once func(context.Context, func(Delta)) (*Response, error)) (*Response, error) {
	for attempt := 0; ; attempt++ {
		streamed := false
		res, err := once(ctx, func(d Delta) {
			streamed = true
			if onDelta != nil {
				onDelta(d)
			}
		})
		if err == nil {
			res.Attempts = attempt + 1
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		wait, ok := retryDelay(cfg.Retry, err, attempt)
		if !ok || streamed || attempt+1 >= cfg.Retry.Tries() {
			if attempt > 0 {
				return nil, fmt.Errorf("after %d attempts: %w", attempt+1, err)
			}
			return nil, err
		}
		if serr := cfg.Sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%w (stopped waiting to retry: %w)", err, serr)
		}
	}
}

// retryDelay says whether err is worth another attempt and after how
// long, by nerve's one HTTP retry policy (internal/httpretry): a status
// it retries, waiting what Retry-After asks up to its cap, or a lost
// connection.
func retryDelay(p httpretry.Policy, err error, attempt int) (time.Duration, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		if !p.Retryable(se.Status) {
			return 0, false
		}
		return p.Wait(attempt, se.RetryAfter, se.retryNamed)
	}
	if !isTransient(err) {
		return 0, false
	}
	return p.Wait(attempt, 0, false)
}

// isTransient reports errors of the connection (refused, reset, EOF, a
// per-request timeout) as opposed to answers.
func isTransient(err error) bool {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	var te *transportError
	return errors.As(err, &te)
}

type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// traced runs one chat request (send: its tries) as a span of the
// generative AI conventions (internal/telemetry); each try's HTTP request
// carries the span's trace context (post).
func traced(ctx context.Context, provider, model, url string, send func(context.Context) (*Response, error)) (*Response, error) {
	ctx, span := telemetry.Chat(ctx, provider, model, url)
	res, err := send(ctx)
	if res != nil && res.Usage != nil {
		span.Usage(res.Usage.PromptTokens, res.Usage.CompletionTokens)
	}
	span.End(err)
	return res, err
}
