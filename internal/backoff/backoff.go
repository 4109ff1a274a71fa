// Package backoff is nerve's one exponential backoff: how long to wait
// before each retry of something that failed (doubling from a base, up to
// a cap, with optional jitter), and a wait that ends early when its
// context does. A graph step's retries, an mcp node's restarts and nerve's
// one HTTP retry (internal/httpretry: the mcp and llm kinds) all use it.
//
// It reads the runtime's clock and timers: tests run it inside a
// testing/synctest bubble, where time is virtual, so no clock is passed
// in. It imports nothing of nerve's; anything may import it.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff describes the delays between tries. The zero value waits
// nothing.
type Backoff struct {
	// Base is the wait before the first retry; each later one doubles.
	Base time.Duration
	// Max caps every wait; 0 means no cap (but never past 2⁶¹ ns, some
	// 73 years, so a doubling never overflows).
	Max time.Duration
	// Jitter spreads each wait by up to ±Jitter of it (0.25: ±25 %; at
	// most 1), so clients that failed together do not retry together.
	Jitter float64
}

// Delay returns the wait before retry n (0 is the first retry):
// Base·2ⁿ, at most Max, spread by Jitter.
func (b Backoff) Delay(n int) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	const most = time.Duration(1 << 61)
	shift := min(max(n, 0), 61)
	d := b.Base << shift
	if d>>shift != b.Base || d <= 0 || d > most { // doubled past most
		d = most
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		spread := time.Duration(float64(d) * min(b.Jitter, 1))
		d = d - spread + time.Duration(rand.Int64N(int64(2*spread)+1))
	}
	return d
}

// Wait waits Delay(n), or until ctx is done, when it returns ctx's
// error.
func (b Backoff) Wait(ctx context.Context, n int) error {
	return Sleep(ctx, b.Delay(n))
}

// Sleep waits d, or until ctx is done, when it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
