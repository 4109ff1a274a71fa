package node

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

var allStates = []State{Created, Starting, Ready, Busy, Stopping, Stopped, Error}

// legalMoves is the transition diagram of ARCHITECTURE.md, written out
// independently of the table in state.go.
var legalMoves = map[[2]State]bool{
	{Created, Starting}:  true,
	{Created, Stopping}:  true, // Stop works from any state
	{Starting, Ready}:    true,
	{Starting, Error}:    true,
	{Starting, Stopping}: true,
	{Ready, Busy}:        true,
	{Ready, Error}:       true,
	{Ready, Stopping}:    true,
	{Busy, Ready}:        true,
	{Busy, Error}:        true,
	{Busy, Stopping}:     true,
	{Stopping, Stopped}:  true,
	{Stopped, Starting}:  true, // restart
	{Error, Stopping}:    true, // the only way out of ERROR
}

// pathTo is a legal way from CREATED to each state.
var pathTo = map[State][]State{
	Created:  nil,
	Starting: {Starting},
	Ready:    {Starting, Ready},
	Busy:     {Starting, Ready, Busy},
	Stopping: {Stopping},
	Stopped:  {Stopping, Stopped},
	Error:    {Starting, Error},
}

func machineIn(t *testing.T, s State) *Machine {
	t.Helper()
	m := new(Machine)
	for _, st := range pathTo[s] {
		if err := m.To(st, "on the way"); err != nil {
			t.Fatalf("reaching %s: %v", s, err)
		}
	}
	if got := m.State(); got != s {
		t.Fatalf("machine is %s, want %s", got, s)
	}
	return m
}

func TestTransitionsAllPairs(t *testing.T) {
	for _, from := range allStates {
		for _, to := range allStates {
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				want := legalMoves[[2]State{from, to}]
				if got := CanTransition(from, to); got != want {
					t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
				}
				m := machineIn(t, from)
				var seen []string
				m.SetObserver(func(f, tt State, reason string) { seen = append(seen, f.String()+">"+tt.String()) })
				err := m.To(to, "why")
				if want {
					if err != nil {
						t.Fatalf("To(%s) from %s: %v, want success", to, from, err)
					}
					if m.State() != to {
						t.Errorf("state = %s, want %s", m.State(), to)
					}
					if len(seen) != 1 || seen[0] != from.String()+">"+to.String() {
						t.Errorf("observer saw %v, want [%s>%s]", seen, from, to)
					}
					return
				}
				var te *TransitionError
				if !errors.As(err, &te) {
					t.Fatalf("To(%s) from %s: err = %v, want a *TransitionError", to, from, err)
				}
				if te.From != from || te.To != to {
					t.Errorf("error says %s→%s, want %s→%s", te.From, te.To, from, to)
				}
				if !strings.Contains(err.Error(), "node is "+from.String()) {
					t.Errorf("error %q does not name the current state %s", err, from)
				}
				if m.State() != from {
					t.Errorf("illegal move changed the state to %s", m.State())
				}
				if len(seen) != 0 {
					t.Errorf("observer told about an illegal move: %v", seen)
				}
			})
		}
	}
}

func TestToIf(t *testing.T) {
	m := machineIn(t, Ready)
	if err := m.ToIf(Busy, "", Starting); err == nil {
		t.Fatal("ToIf(Busy) from READY allowing only STARTING succeeded")
	} else if !strings.Contains(err.Error(), "READY") {
		t.Errorf("error %q does not name READY", err)
	}
	if err := m.ToIf(Busy, "", Starting, Ready); err != nil {
		t.Fatalf("ToIf(Busy) from READY: %v", err)
	}
	// Allowed by the caller but not by the table.
	if err := m.ToIf(Stopped, "", Busy); err == nil {
		t.Fatal("ToIf(Stopped) from BUSY succeeded; the table forbids it")
	}
}

func TestErrorKeepsReason(t *testing.T) {
	m := machineIn(t, Starting)
	var gotReason string
	m.SetObserver(func(_, _ State, reason string) { gotReason = reason })
	if err := m.To(Error, "exit status 1: npx: command not found"); err != nil {
		t.Fatal(err)
	}
	st, reason := m.Get()
	if st != Error || reason != "exit status 1: npx: command not found" {
		t.Errorf("Get() = %s, %q; want ERROR with its reason", st, reason)
	}
	if gotReason != reason {
		t.Errorf("observer got reason %q, want %q", gotReason, reason)
	}
	// An illegal move out of ERROR keeps the reason.
	if err := m.To(Ready, ""); err == nil {
		t.Fatal("ERROR → READY succeeded")
	}
	if _, r := m.Get(); r != reason {
		t.Errorf("reason after an illegal move = %q, want %q", r, reason)
	}
	// Leaving ERROR clears it.
	if err := m.To(Stopping, "stop requested"); err != nil {
		t.Fatal(err)
	}
	if _, r := m.Get(); r != "" {
		t.Errorf("reason in STOPPING = %q, want none", r)
	}
}

// TestObserverOrder checks that concurrent moves reach the observer in the
// order they happened: each reported move starts where the previous ended.
func TestObserverOrder(t *testing.T) {
	m := machineIn(t, Ready)
	var mu sync.Mutex
	var moves [][2]State
	m.SetObserver(func(from, to State, _ string) {
		mu.Lock()
		moves = append(moves, [2]State{from, to})
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if m.ToIf(Busy, "", Ready) == nil {
					_ = m.ToIf(Ready, "", Busy)
				}
			}
		}()
	}
	wg.Wait()
	if len(moves) == 0 {
		t.Fatal("observer saw no moves")
	}
	prev := Ready
	for i, mv := range moves {
		if mv[0] != prev {
			t.Fatalf("move %d is %s→%s but the machine was %s", i, mv[0], mv[1], prev)
		}
		prev = mv[1]
	}
	if prev != m.State() {
		t.Errorf("last move ended in %s, machine is %s", prev, m.State())
	}
}

func TestStateNames(t *testing.T) {
	for _, s := range allStates {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%s: round trip gave %s, %v", s, back, err)
		}
	}
	if got := State(42).String(); got != "State(42)" {
		t.Errorf("State(42).String() = %q", got)
	}
	if CanTransition(State(42), Ready) || CanTransition(Ready, State(42)) {
		t.Error("CanTransition accepts an unknown state")
	}
	if _, err := ParseState("RUNNING"); err == nil || !strings.Contains(err.Error(), "READY") {
		t.Errorf("ParseState(RUNNING) = %v, want an error listing the states", err)
	}
}

// TestNotReadyNamesOneFix: a node in ERROR whose reason names its own fix
// (a sign-in) is not also told to restart, which would not sign it in;
// any other reason gets the restart (issue 27 item 6).
func TestNotReadyNamesOneFix(t *testing.T) {
	signIn := "the server at http://x/mcp needs you to sign in (OAuth) before nerve may use it: run `nerve node auth fs` to authorize nerve in a browser"
	if got := NotReady("fs", Error, signIn).Error(); strings.Contains(got, "restart") || !strings.Contains(got, "`nerve node auth fs`") {
		t.Errorf("sign-in needed: %q; want the sign-in alone", got)
	}
	if got := NotReady("fs", Error, "the server exited with status 1").Error(); !strings.HasSuffix(got, "restart it with `nerve node restart fs`") {
		t.Errorf("a failure: %q; want the restart", got)
	}
}
