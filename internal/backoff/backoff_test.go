package backoff

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestDelay: the waits double from Base and stop at Max; with no Max
// they never overflow.
func TestDelay(t *testing.T) {
	b := Backoff{Base: time.Second, Max: time.Minute}
	var got []time.Duration
	for n := range 9 {
		got = append(got, b.Delay(n))
	}
	s := time.Second
	want := []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	if d := b.Delay(1000); d != time.Minute {
		t.Errorf("Delay(1000) = %v, want the cap", d)
	}
	uncapped := Backoff{Base: 3 * time.Second}
	for _, n := range []int{40, 62, 63, 64, 1000} {
		if d := uncapped.Delay(n); d <= uncapped.Delay(n-1)/2 || d <= 0 {
			t.Errorf("uncapped Delay(%d) = %v after %v: overflowed", n, d, uncapped.Delay(n-1))
		}
	}
	if d := (Backoff{}).Delay(3); d != 0 {
		t.Errorf("the zero Backoff waits %v, want nothing", d)
	}
}

// TestJitter: each wait stays within ±Jitter of the plain one, and the
// waits differ.
func TestJitter(t *testing.T) {
	b := Backoff{Base: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.25}
	for _, tc := range []struct {
		n     int
		plain time.Duration
	}{{0, 500 * time.Millisecond}, {1, time.Second}, {2, 2 * time.Second}, {10, 30 * time.Second}} {
		n, plain := tc.n, tc.plain
		seen := map[time.Duration]bool{}
		for range 200 {
			d := b.Delay(n)
			if d < plain*3/4 || d > plain*5/4 {
				t.Fatalf("Delay(%d) = %v, want within ±25%% of %v", n, d, plain)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("Delay(%d) took %d values in 200 draws: no jitter", n, len(seen))
		}
	}
}

// TestRetryLoopWaits: a retry loop waits each delay in turn, up to the
// cap, on the clock (virtual inside the bubble).
func TestRetryLoopWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Backoff{Base: time.Second, Max: 5 * time.Second}
		var waited []time.Duration
		for n := range 5 {
			start := time.Now()
			if err := b.Wait(t.Context(), n); err != nil {
				t.Fatal(err)
			}
			waited = append(waited, time.Since(start))
		}
		s := time.Second
		if want := []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s}; !slices.Equal(waited, want) {
			t.Errorf("waited %v, want %v", waited, want)
		}
	})
}

// TestWaitCancelled: cancelling the context ends a wait at once, with
// the context's error.
func TestWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(1500*time.Millisecond, cancel)
		start := time.Now()
		err := Backoff{Base: time.Minute}.Wait(ctx, 0)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 1500*time.Millisecond {
			t.Errorf("the wait ended after %v, want 1.5s (the cancel)", got)
		}
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep on a done context = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 1500*time.Millisecond {
			t.Errorf("Sleep on a done context waited until %v", got)
		}
	})
}
