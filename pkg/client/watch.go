package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/nerve-dev/nerve/pkg/api"
)

// ErrWatchClosed is returned by Next after Close, or when the daemon ended
// the stream (the session was removed, the daemon stopped).
var ErrWatchClosed = errors.New("event watch closed")

// Watcher receives a session's events. Next and Close may be called from
// different goroutines; Close may be called twice.
type Watcher struct {
	cancel context.CancelFunc
	body   io.ReadCloser
	events chan api.Event
	done   chan struct{}
	closed chan struct{}
	// err is the reason the stream ended; read it after done is closed.
	err  error
	once sync.Once
}

// Subscribe starts watching the session's events. It returns once the
// daemon has subscribed: every event that happens after it returns is seen.
func (s *Session) Subscribe(ctx context.Context) (*Watcher, error) {
	// The stream outlives ctx (which only bounds the subscribing) and ends
	// with Close.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	resp, err := s.c.send(wctx, http.MethodGet, s.path+"/events", nil)
	stop()
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	w := &Watcher{cancel: cancel, body: resp.Body, events: make(chan api.Event, 64), done: make(chan struct{}), closed: make(chan struct{})}
	go w.read()
	return w, nil
}

func (w *Watcher) read() {
	defer close(w.done)
	dec := json.NewDecoder(w.body)
	for {
		var ev api.Event
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				w.err = ErrWatchClosed
			} else {
				w.err = fmt.Errorf("%w: %v", ErrWatchClosed, err)
			}
			return
		}
		select {
		case w.events <- ev:
		case <-w.closed:
			w.err = ErrWatchClosed
			return
		}
	}
}

// Next returns the next event, waiting until one arrives, ctx ends or the
// watch is closed.
func (w *Watcher) Next(ctx context.Context) (api.Event, error) {
	select {
	case ev := <-w.events:
		return ev, nil
	default:
	}
	select {
	case ev := <-w.events:
		return ev, nil
	case <-w.done:
		// Deliver what was read before the end.
		select {
		case ev := <-w.events:
			return ev, nil
		default:
		}
		return api.Event{}, w.err
	case <-ctx.Done():
		return api.Event{}, ctx.Err()
	}
}

// Close ends the watch and waits for its reader to stop.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		close(w.closed)
		w.cancel()
		w.body.Close()
	})
	<-w.done
	return nil
}
