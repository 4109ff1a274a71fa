package session

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Event kinds.
const (
	EventState       = api.EventState       // From, To, Reason
	EventTools       = api.EventTools       // the node's tool list changed
	EventNodeAdded   = api.EventNodeAdded   // Kind
	EventNodeRemoved = api.EventNodeRemoved //
	EventCallStart   = api.EventCallStart   // Call, Tool
	EventCallEnd     = api.EventCallEnd     // Call, Tool, Duration, IsError, Error
	EventSettings    = api.EventSettings    // the session's settings changed (no node)
)

// Event is something that happened in a session. It is also the wire form
// of session events in the daemon's API.
type Event = api.Event

// Subscription receives a session's events on C until Close. A subscriber
// that falls more than its buffer behind loses the oldest events; Dropped
// counts them, so a client can tell and refresh its view.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	filter  func(*Event) bool // nil: every event
	hub     *hub
	dropped atomic.Uint64
	once    sync.Once
}

// Dropped returns how many events were lost because the subscriber was slow.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes C. It is safe to call twice.
func (s *Subscription) Close() {
	s.once.Do(func() { s.hub.remove(s) })
}

// hub fans events out to subscribers without ever blocking the publisher.
type hub struct {
	n   atomic.Int32 // number of subscribers, read without the lock
	seq atomic.Uint64
	// mu guards subs and the closing of their channels.
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

func (h *hub) active() bool { return h.n.Load() > 0 }

func (h *hub) add(buf int, filter func(*Event) bool) *Subscription {
	if buf <= 0 {
		buf = 256
	}
	c := make(chan Event, buf)
	s := &Subscription{C: c, c: c, hub: h, filter: filter}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[*Subscription]struct{})
	}
	h.subs[s] = struct{}{}
	h.n.Add(1)
	h.mu.Unlock()
	return s
}

func (h *hub) remove(s *Subscription) {
	h.mu.Lock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		h.n.Add(-1)
		close(s.c)
	}
	h.mu.Unlock()
}

func (h *hub) closeAll() {
	h.mu.Lock()
	for s := range h.subs {
		delete(h.subs, s)
		h.n.Add(-1)
		close(s.c)
	}
	h.mu.Unlock()
}

// publish sends ev to every subscriber whose filter takes it. With none
// it costs nothing: ev escapes to the heap only in deliver.
func (h *hub) publish(ev Event) {
	if !h.active() {
		return
	}
	h.deliver(ev)
}

func (h *hub) deliver(ev Event) {
	ev.Seq = h.seq.Add(1)
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.filter != nil && !s.filter(&ev) {
			continue
		}
		for {
			select {
			case s.c <- ev:
			default:
				// Full: drop the oldest and try again.
				select {
				case <-s.c:
					s.dropped.Add(1)
				default:
				}
				continue
			}
			break
		}
	}
}

func stateEvent(id string, from, to node.State, reason string) Event {
	return Event{Kind: EventState, Node: id, From: from.String(), To: to.String(), Reason: reason}
}
