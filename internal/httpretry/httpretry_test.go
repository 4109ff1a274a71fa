package httpretry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// server answers each request with the next of its statuses (200 once
// they run out), with header, and records the bodies and times of the
// requests it got. It is an http.Handler, served in-process by
// handlerTransport inside a bubble (where time is virtual) or by
// httptest.NewServer outside one.
type server struct {
	statuses []int
	header   http.Header

	mu     sync.Mutex
	bodies []string
	at     []time.Time
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(b))
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	if n < len(s.statuses) {
		for k, v := range s.header {
			w.Header()[k] = v
		}
		http.Error(w, "not now", s.statuses[n])
		return
	}
	io.WriteString(w, "ok")
}

// waits returns the time between each request and the one before.
func (s *server) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(s.at); i++ {
		out = append(out, s.at[i].Sub(s.at[i-1]))
	}
	return out
}

// handlerTransport serves requests with a handler in-process, as an
// httptest server would over a socket.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func send(t *testing.T, tr *Transport, ctx context.Context, method, body string) (*http.Response, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://server/mcp", r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// within reports whether d is within ±25 % of want (the jitter).
func within(d, want time.Duration) bool { return d >= want*3/4 && d <= want*5/4 }

// TestEachStatusIsRetried: 429, 502, 503 and 504 are answered once, and
// the request is sent again after the policy's base wait (with jitter);
// its body is sent again, whole.
func TestEachStatusIsRetried(t *testing.T) {
	for _, status := range []int{429, 502, 503, 504} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &server{statuses: []int{status}}
				tr := &Transport{Base: handlerTransport{s}, Policy: Policy{Base: time.Second}}
				resp, err := send(t, tr, t.Context(), http.MethodPut, `{"the":"body"}`)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("RoundTrip = %v, %v; want it retried to 200", resp, err)
				}
				if len(s.bodies) != 2 || s.bodies[1] != `{"the":"body"}` {
					t.Errorf("the server got %q; want the body twice", s.bodies)
				}
				if w := s.waits(); len(w) != 1 || !within(w[0], time.Second) {
					t.Errorf("waited %v; want 1s ±25%%", w)
				}
			})
		})
	}
}

// TestRetryAfter: a wait the server names — seconds, milliseconds, an
// HTTP date — is waited as asked; one over the policy's Max is not
// waited for at all, and the error says so.
func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header func(now time.Time) http.Header
		want   time.Duration
	}{
		{"seconds", func(time.Time) http.Header { return http.Header{"Retry-After": {"3"}} }, 3 * time.Second},
		{"zero", func(time.Time) http.Header { return http.Header{"Retry-After": {"0"}} }, 0},
		{"milliseconds", func(time.Time) http.Header { return http.Header{"Retry-After-Ms": {"1500"}} }, 1500 * time.Millisecond},
		{"HTTP date", func(now time.Time) http.Header {
			return http.Header{"Retry-After": {now.Add(5 * time.Second).UTC().Format(http.TimeFormat)}}
		}, 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The bubble's clock starts on a whole second, as HTTP
				// dates are.
				s := &server{statuses: []int{503}, header: tt.header(time.Now())}
				tr := &Transport{Base: handlerTransport{s}}
				if resp, err := send(t, tr, t.Context(), http.MethodPost, "x"); err != nil || resp.StatusCode != 200 {
					t.Fatalf("RoundTrip = %v, %v", resp, err)
				}
				if w := s.waits(); len(w) != 1 || w[0] != tt.want {
					t.Errorf("waited %v; want %v", w, tt.want)
				}
			})
		})
	}
	t.Run("longer than Max", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &server{statuses: []int{429}, header: http.Header{"Retry-After": {"3600"}}}
			tr := &Transport{Base: handlerTransport{s}, Policy: Policy{Max: time.Minute}}
			_, err := send(t, tr, t.Context(), http.MethodPost, "x")
			var se *StatusError
			if !errors.As(err, &se) || !se.TooLong || se.Tries != 1 || se.RetryAfter != time.Hour {
				t.Fatalf("RoundTrip error %v (%+v); want a StatusError saying the wait was too long", err, se)
			}
			if want := "asked to wait 1h0m0s (Retry-After), longer than nerve waits"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q; want it to say %q", err, want)
			}
			if len(s.bodies) != 1 {
				t.Errorf("sent %d times; want once", len(s.bodies))
			}
		})
	})
}

// TestGivesUp: a server that keeps saying 503 gets the policy's tries,
// with doubling waits up to Max, then the caller gets a StatusError that
// counts them.
func TestGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{statuses: []int{503, 503, 503, 503, 503, 503}}
		tr := &Transport{Base: handlerTransport{s}, Policy: Policy{Attempts: 5, Base: time.Second, Max: 3 * time.Second}}
		_, err := send(t, tr, t.Context(), http.MethodPost, "x")
		var se *StatusError
		if !errors.As(err, &se) || se.Tries != 5 || se.Status != 503 {
			t.Fatalf("RoundTrip error %v; want a StatusError after 5 tries", err)
		}
		if !strings.Contains(err.Error(), "503 Service Unavailable 5 times in a row") {
			t.Errorf("error %q", err)
		}
		w := s.waits()
		want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
		if len(w) != len(want) {
			t.Fatalf("waited %v; want about %v", w, want)
		}
		for i := range w {
			if w[i] > 3*time.Second || (i < 2 && !within(w[i], want[i])) || (i >= 2 && w[i] < 3*time.Second*3/4) {
				t.Errorf("wait %d was %v; want about %v, never over Max", i, w[i], want[i])
			}
		}
	})
}

// TestJitter: clients turned away together do not all come back together.
func TestJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for range 20 {
			s := &server{statuses: []int{503}}
			tr := &Transport{Base: handlerTransport{s}, Policy: Policy{Base: time.Second}}
			if _, err := send(t, tr, t.Context(), http.MethodGet, ""); err != nil {
				t.Fatal(err)
			}
			seen[s.waits()[0]] = true
		}
		if len(seen) < 5 {
			t.Errorf("20 retries waited only %d different times: no jitter", len(seen))
		}
	})
}

// TestPostAfterGateway: a POST answered 502 or 504 may have run (the
// gateway failed after the server got it), so by default it is not sent
// again; 429 and 503 say the server did not process it, so it is.
func TestPostAfterGateway(t *testing.T) {
	for _, tt := range []struct {
		status int
		sent   int
	}{{502, 1}, {504, 1}, {503, 2}, {429, 2}} {
		synctest.Test(t, func(t *testing.T) {
			s := &server{statuses: []int{tt.status}}
			tr := &Transport{Base: handlerTransport{s}}
			resp, err := send(t, tr, t.Context(), http.MethodPost, "x")
			if len(s.bodies) != tt.sent {
				t.Errorf("%d: the POST was sent %d times; want %d", tt.status, len(s.bodies), tt.sent)
			}
			var se *StatusError
			if tt.sent == 1 {
				if !errors.As(err, &se) || !se.NotResent || !strings.Contains(err.Error(), "did not send it again, as it may have run") {
					t.Errorf("%d: RoundTrip = %v, %v; want a StatusError saying it was not sent again", tt.status, resp, err)
				}
			} else if err != nil {
				t.Errorf("%d: %v", tt.status, err)
			}
		})
	}
}

// TestResendRule: a Resend rule decides per request (the mcp node's
// reads its JSON-RPC method).
func TestResendRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{statuses: []int{502}}
		tr := &Transport{Base: handlerTransport{s}, Resend: func(req *http.Request, status int) bool {
			b, _ := req.GetBody()
			body, _ := io.ReadAll(b)
			return bytes.Contains(body, []byte("tools/list"))
		}}
		if resp, err := send(t, tr, t.Context(), http.MethodPost, `{"method":"tools/list"}`); err != nil || resp.StatusCode != 200 {
			t.Errorf("a read after 502: %v, %v; want it sent again", resp, err)
		}
	})
}

// TestPassesThrough: an answer the policy does not retry, and a body
// that cannot be read again, come back as they came, after one try.
func TestPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{statuses: []int{500}}
		tr := &Transport{Base: handlerTransport{s}}
		if resp, err := send(t, tr, t.Context(), http.MethodGet, ""); err != nil || resp.StatusCode != 500 || len(s.bodies) != 1 {
			t.Errorf("500: %v, %v, %d tries; want it as it came, once", resp, err, len(s.bodies))
		}
		s = &server{statuses: []int{503}}
		tr = &Transport{Base: handlerTransport{s}}
		req, _ := http.NewRequest(http.MethodPost, "http://server/", io.NopCloser(strings.NewReader("once")))
		if resp, err := tr.RoundTrip(req); err != nil || resp.StatusCode != 503 || len(s.bodies) != 1 {
			t.Errorf("a body that cannot be read again: %v, %v, %d tries; want the 503, once", resp, err, len(s.bodies))
		}
	})
}

// TestDeadline: a wait that would end past the request's deadline is not
// begun; cancelling the request ends a wait.
func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{statuses: []int{503, 503}, header: http.Header{"Retry-After": {"5"}}}
		tr := &Transport{Base: handlerTransport{s}}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := send(t, tr, ctx, http.MethodPost, "x")
		var se *StatusError
		if !errors.As(err, &se) || !se.TooLong || time.Since(start) != 0 {
			t.Errorf("RoundTrip = %v after %v; want a StatusError at once", err, time.Since(start))
		}
		s = &server{statuses: []int{503}}
		tr = &Transport{Base: handlerTransport{s}, Policy: Policy{Base: time.Minute, Max: time.Hour}}
		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		if _, err := send(t, tr, ctx, http.MethodPost, "x"); !errors.Is(err, context.Canceled) {
			t.Errorf("RoundTrip cancelled while waiting = %v; want context.Canceled", err)
		}
	})
}

// TestOverTheNetwork: the same through a real HTTP server and client: the
// body crosses the wire again on the retry.
func TestOverTheNetwork(t *testing.T) {
	s := &server{statuses: []int{503}}
	ts := httptest.NewServer(s)
	defer ts.Close()
	c := &http.Client{Transport: &Transport{Base: ts.Client().Transport, Policy: Policy{Base: time.Millisecond}}}
	resp, err := c.Post(ts.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(s.bodies) != 2 || s.bodies[0] != s.bodies[1] {
		t.Errorf("status %d, bodies %q; want 200 and the body twice", resp.StatusCode, s.bodies)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		h     http.Header
		want  time.Duration
		named bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"5"}}, 5 * time.Second, true},
		{http.Header{"Retry-After": {"0"}}, 0, true},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"99999999999999"}}, 0, false},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
	} {
		got, named := RetryAfter(tt.h, now)
		if got != tt.want || named != tt.named {
			t.Errorf("RetryAfter(%v) = %v, %v; want %v, %v", tt.h, got, named, tt.want, tt.named)
		}
	}
}
