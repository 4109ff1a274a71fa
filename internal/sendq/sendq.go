// Package sendq is the queue between a producer that must never wait and
// a reader that may stop reading at any moment: a node's events on their
// way to one client's socket, where the producer is the goroutine that
// reads the node's server and the reader may be a terminal someone
// suspended with Ctrl-Z.
//
// Each reader gets its own Queue. Push never blocks: it queues the value,
// or drops it when the queue holds its limit, and counts the drop. A
// goroutine of the queue's own, started by the first Push and ended when
// the queue is empty, hands the values to the reader in order; only that
// goroutine waits for a slow reader. Close stops the queue and waits until
// what it holds was handed over.
//
// It imports nothing of nerve's; anything may import it.
package sendq

import (
	"sync"
	"sync/atomic"
)

// queued and dropped count every queue's values together, for the
// daemon's metrics (Stats): values queued and not yet handed to their
// reader, and values dropped since the process started.
var queued, dropped atomic.Int64

// Stats returns how many values all queues hold now, and how many they
// have dropped in all.
func Stats() (holding, lost int64) { return queued.Load(), dropped.Load() }

// Item is one queued value and how many values were dropped just before
// it (the reader was that far behind).
type Item[T any] struct {
	Value T
	Lost  int
	size  int
}

// Queue is one reader's bounded queue. The zero value is not usable; see
// New.
type Queue[T any] struct {
	limit int
	send  func([]Item[T])

	// mu guards the fields below. It is never held while send runs.
	mu      sync.Mutex
	items   []Item[T]
	size    int           // the sum of the queued items' sizes
	lost    int           // dropped since the last queued item
	closed  bool          // Close was called: Push drops everything
	drained chan struct{} // closed when the running drainer ends; nil when none runs
}

// New returns a queue that holds at most limit (the sum of the sizes
// given to Push) and hands what it holds to send, in order, a batch at a
// time, on its own goroutine: send may block for as long as the reader
// does not read.
func New[T any](limit int, send func(batch []Item[T])) *Queue[T] {
	return &Queue[T]{limit: limit, send: send}
}

// Push queues v, whose share of the limit is size, and returns at once:
// true if it was queued, false if it was dropped (the queue is full or
// closed). A value larger than the limit is queued only into an empty
// queue, so one large value still gets through to a reader that keeps up.
func (q *Queue[T]) Push(v T, size int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		dropped.Add(1)
		return false
	}
	if len(q.items) > 0 && q.size+size > q.limit {
		q.lost++
		dropped.Add(1)
		return false
	}
	queued.Add(1)
	q.items = append(q.items, Item[T]{Value: v, Lost: q.lost, size: size})
	q.size += size
	q.lost = 0
	if q.drained == nil {
		q.drained = make(chan struct{})
		go q.drain(q.drained)
	}
	return true
}

// drain hands the queued items to send until the queue is empty.
func (q *Queue[T]) drain(done chan struct{}) {
	defer close(done)
	for {
		q.mu.Lock()
		batch := q.items
		if len(batch) == 0 {
			q.drained = nil
			q.mu.Unlock()
			return
		}
		q.items, q.size = nil, 0
		q.mu.Unlock()
		queued.Add(-int64(len(batch)))
		q.send(batch)
	}
}

// Close stops the queue: later Pushes drop their values. It waits until
// everything queued was handed to send, and returns how many values were
// dropped after the last one queued (a reader that is told of the drops
// should hear of these too). It is safe to call more than once; the later
// calls return 0.
func (q *Queue[T]) Close() (lost int) {
	q.mu.Lock()
	q.closed = true
	lost, q.lost = q.lost, 0
	done := q.drained
	q.mu.Unlock()
	if done != nil {
		<-done
	}
	return lost
}
