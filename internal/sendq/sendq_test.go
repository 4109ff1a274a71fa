package sendq

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// reader is a reader that can be stalled: send blocks while it is.
type reader struct {
	mu    sync.Mutex
	got   []int
	lost  []int // Lost of each item, in order
	gate  chan struct{}
	stall bool
}

func (r *reader) send(batch []Item[int]) {
	r.mu.Lock()
	stall, gate := r.stall, r.gate
	r.mu.Unlock()
	if stall {
		<-gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range batch {
		r.got = append(r.got, it.Value)
		r.lost = append(r.lost, it.Lost)
	}
}

// TestPushNeverWaits: while the reader is stalled, Push returns at once,
// keeps up to the limit and drops the rest, counting the drops; once the
// reader reads again it gets what was kept, in order, and the drops are
// counted where they happened.
func TestPushNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &reader{gate: make(chan struct{}), stall: true}
		q := New(3, r.send)
		q.Push(0, 1) // taken by the drainer, which stalls on it
		synctest.Wait()
		for v := 1; v <= 10; v++ {
			q.Push(v, 1) // 1..3 fit, 4..10 dropped
		}
		r.mu.Lock()
		r.stall = false
		r.mu.Unlock()
		close(r.gate)
		synctest.Wait()
		q.Push(11, 1)
		if lost := q.Close(); lost != 0 {
			t.Errorf("Close = %d lost, want 0 (the drops were before 11)", lost)
		}
		if want := []int{0, 1, 2, 3, 11}; !slices.Equal(r.got, want) {
			t.Errorf("the reader got %v, want %v", r.got, want)
		}
		if want := []int{0, 0, 0, 0, 7}; !slices.Equal(r.lost, want) {
			t.Errorf("lost counts %v, want %v (7 dropped before 11)", r.lost, want)
		}
	})
}

// TestCloseWaitsAndCounts: Close waits until what was queued was handed
// over, returns the drops after the last queued value, and later Pushes
// drop.
func TestCloseWaitsAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &reader{gate: make(chan struct{}), stall: true}
		q := New(2, r.send)
		q.Push(1, 1)
		synctest.Wait()
		q.Push(2, 1)
		q.Push(3, 1)
		q.Push(4, 1) // dropped
		q.Push(5, 1) // dropped
		closed := make(chan int)
		go func() { closed <- q.Close() }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while the reader was stalled")
		default:
		}
		close(r.gate)
		if lost := <-closed; lost != 2 {
			t.Errorf("Close = %d lost, want 2", lost)
		}
		if want := []int{1, 2, 3}; !slices.Equal(r.got, want) {
			t.Errorf("the reader got %v, want %v", r.got, want)
		}
		if q.Push(6, 1) {
			t.Error("Push after Close queued its value")
		}
		if lost := q.Close(); lost != 0 {
			t.Errorf("a second Close = %d, want 0", lost)
		}
	})
}

// TestLargeValueIntoEmptyQueue: one value over the limit still reaches a
// reader that keeps up.
func TestLargeValueIntoEmptyQueue(t *testing.T) {
	r := &reader{}
	q := New(10, r.send)
	if !q.Push(1, 100) {
		t.Fatal("a value over the limit was dropped from an empty queue")
	}
	q.Close()
	if !slices.Equal(r.got, []int{1}) {
		t.Errorf("the reader got %v", r.got)
	}
}

// TestNoGoroutineLeftBehind: the drainer ends when the queue is empty,
// and a queue that was never pushed to starts none.
func TestNoGoroutineLeftBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &reader{}
		q := New(10, r.send)
		for v := range 5 {
			q.Push(v, 1)
		}
		synctest.Wait() // every goroutine in the bubble is blocked or gone
		buf := make([]byte, 1<<16)
		if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "sendq.(*Queue[...]).drain") {
			t.Errorf("a drainer is left with the queue empty:\n%s", st)
		}
		if !slices.Equal(r.got, []int{0, 1, 2, 3, 4}) {
			t.Errorf("the reader got %v", r.got)
		}
	})
}
