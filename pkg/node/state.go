package node

import (
	"fmt"
	"sync"

	"github.com/nerve-dev/nerve/pkg/api"
)

// State is the lifecycle state of a node; the type is the wire's
// (pkg/api), the moves between states are this package's.
//
//	CREATED → STARTING → READY ⇄ BUSY → STOPPING → STOPPED
//	STARTING, READY, BUSY → ERROR → STOPPING;  STOPPED → STARTING (restart)
type State = api.State

// The states.
const (
	Created  = api.StateCreated
	Starting = api.StateStarting
	Ready    = api.StateReady
	Busy     = api.StateBusy
	Stopping = api.StateStopping
	Stopped  = api.StateStopped
	Error    = api.StateError
)

// ParseState returns the State with the given name.
func ParseState(name string) (State, error) { return api.ParseState(name) }

// transitions is the one table of legal moves: transitions[from][to].
var transitions = [...][api.NumStates]bool{
	Created:  {Starting: true, Stopping: true},
	Starting: {Ready: true, Error: true, Stopping: true},
	Ready:    {Busy: true, Error: true, Stopping: true},
	Busy:     {Ready: true, Error: true, Stopping: true},
	Stopping: {Stopped: true},
	Stopped:  {Starting: true},
	Error:    {Stopping: true},
}

// CanTransition reports whether from → to is a legal move.
func CanTransition(from, to State) bool {
	if int(from) >= len(transitions) || int(to) >= api.NumStates {
		return false
	}
	return transitions[from][to]
}

// TransitionError is returned for an illegal state move.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("node is %s: cannot move to %s", e.From, e.To)
}

// StateFunc observes a state change. Calls for one machine are serialised
// and arrive in the order the changes happened; the observer must not move
// the same machine (it would deadlock) and should return quickly.
type StateFunc func(from, to State, reason string)

// Machine is the one place that moves a node's state. The zero value is a
// machine in CREATED with no observer. It is safe for concurrent use.
type Machine struct {
	// mu guards the fields below.
	mu     sync.Mutex
	state  State
	reason string
	// notifyMu keeps observer calls in transition order.
	notifyMu sync.Mutex
	observe  StateFunc
}

// SetObserver sets the function told about every transition.
func (m *Machine) SetObserver(f StateFunc) {
	m.notifyMu.Lock()
	m.observe = f
	m.notifyMu.Unlock()
}

// State returns the current state.
func (m *Machine) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Get returns the current state and, for ERROR, its reason.
func (m *Machine) Get() (State, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.reason
}

// To moves to state to. reason is kept for ERROR (and cleared otherwise).
// An illegal move returns a *TransitionError naming the current state.
func (m *Machine) To(to State, reason string) error {
	return m.move(func(State) bool { return true }, to, reason)
}

// ToIf moves to state to only when the current state is one of from; it
// returns a *TransitionError otherwise.
func (m *Machine) ToIf(to State, reason string, from ...State) error {
	return m.move(func(cur State) bool {
		for _, f := range from {
			if f == cur {
				return true
			}
		}
		return false
	}, to, reason)
}

func (m *Machine) move(allowed func(State) bool, to State, reason string) error {
	m.notifyMu.Lock()
	defer m.notifyMu.Unlock()
	m.mu.Lock()
	from := m.state
	if !allowed(from) || !CanTransition(from, to) {
		m.mu.Unlock()
		return &TransitionError{From: from, To: to}
	}
	m.state = to
	if to == Error {
		m.reason = reason
	} else {
		m.reason = ""
	}
	m.mu.Unlock()
	if m.observe != nil {
		m.observe(from, to, reason)
	}
	return nil
}
