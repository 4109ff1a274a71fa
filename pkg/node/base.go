package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Base holds what every node kind shares: id, kind, the state machine and
// call counters. Kinds embed it and get ID, Kind, State and BaseInfo.
type Base struct {
	id, kind string
	Machine  Machine
	since    atomic.Int64 // unix nanos of the last transition
	// callMu orders BeginCall/EndCall so READY ⇄ BUSY follows the count.
	callMu   sync.Mutex
	inFlight atomic.Int64
	calls    atomic.Int64
	failures atomic.Int64
}

// Init sets the identity and wires the state machine to env.OnState.
func (b *Base) Init(spec Spec, env Env) {
	b.id, b.kind = spec.ID, spec.Kind
	b.since.Store(time.Now().UnixNano())
	onState := env.OnState
	b.Machine.SetObserver(func(from, to State, reason string) {
		b.since.Store(time.Now().UnixNano())
		if onState != nil {
			onState(from, to, reason)
		}
	})
}

func (b *Base) ID() string   { return b.id }
func (b *Base) Kind() string { return b.kind }

// State returns the current state.
func (b *Base) State() State { return b.Machine.State() }

// CallStarted counts a call in flight; CallDone ends it.
func (b *Base) CallStarted() { b.calls.Add(1); b.inFlight.Add(1) }

// CallDone ends a call started with CallStarted; failed counts it as a
// failure (an error or an IsError result).
func (b *Base) CallDone(failed bool) {
	b.inFlight.Add(-1)
	if failed {
		b.failures.Add(1)
	}
}

// NamesNodeFix reports whether why a node failed already names the
// command that brings it back (`nerve node auth fs` for a sign-in, `nerve
// node restart fs`, `nerve node rm fs`): a message built on it adds no
// other fix, which would send the person the wrong way (a restart does
// not sign in; issue 27).
func NamesNodeFix(reason string) bool { return strings.Contains(reason, "`nerve node ") }

// NotReady is the error of a call to node id in state st (not READY or
// BUSY): it says the state, why (reason), and how to get the node going.
// It wraps ErrNotReady.
func NotReady(id string, st State, reason string) error {
	switch st {
	case Error:
		if NamesNodeFix(reason) {
			return fmt.Errorf("node %q is ERROR (%s): %w", id, reason, ErrNotReady)
		}
		return fmt.Errorf("node %q is ERROR (%s): %w; restart it with `nerve node restart %s`", id, reason, ErrNotReady, id)
	case Created, Stopped:
		return fmt.Errorf("node %q is %s: %w; start it with `nerve node restart %s`", id, st, ErrNotReady, id)
	default:
		return fmt.Errorf("node %q is %s: %w", id, st, ErrNotReady)
	}
}

// BeginCall counts a call in flight and moves READY → BUSY on the first.
// It fails with ErrNotReady, naming the state, unless the node is READY or
// BUSY. Every successful BeginCall must be paired with EndCall.
func (b *Base) BeginCall() error {
	b.callMu.Lock()
	defer b.callMu.Unlock()
	st, reason := b.Machine.Get()
	switch st {
	case Ready:
		if err := b.Machine.ToIf(Busy, "", Ready); err != nil {
			return fmt.Errorf("node %q: %w", b.id, err)
		}
	case Busy:
	default:
		return NotReady(b.id, st, reason)
	}
	b.calls.Add(1)
	b.inFlight.Add(1)
	return nil
}

// EndCall ends a call begun with BeginCall and moves BUSY → READY when it
// was the last one in flight. failed counts an error or IsError result.
func (b *Base) EndCall(failed bool) {
	b.callMu.Lock()
	defer b.callMu.Unlock()
	if failed {
		b.failures.Add(1)
	}
	if b.inFlight.Add(-1) == 0 {
		// The node may have moved on (ERROR, STOPPING) meanwhile; then
		// there is nothing to undo.
		_ = b.Machine.ToIf(Ready, "", Busy)
	}
}

// InFlight returns the number of calls in flight.
func (b *Base) InFlight() int64 { return b.inFlight.Load() }

// BaseInfo fills the fields of Info that Base knows.
func (b *Base) BaseInfo() Info {
	st, reason := b.Machine.Get()
	return Info{
		ID:       b.id,
		Kind:     b.kind,
		State:    st,
		Error:    reason,
		Since:    time.Unix(0, b.since.Load()),
		InFlight: b.inFlight.Load(),
		Calls:    b.calls.Load(),
		Failures: b.failures.Load(),
	}
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
