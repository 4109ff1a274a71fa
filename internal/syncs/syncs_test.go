package syncs

import (
	"sync"
	"testing"
)

// panics reports whether f panicked.
func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// TestAsserts: a held lock passes; a lock not held panics where the checks
// run (race-enabled builds) and passes unnoticed elsewhere.
func TestAsserts(t *testing.T) {
	var m sync.Mutex
	var rw sync.RWMutex
	m.Lock()
	rw.Lock()
	for name, f := range map[string]func(){
		"Mutex held":            func() { AssertLocked(&m) },
		"RWMutex held to write": func() { AssertRLocked(&rw) },
	} {
		if panics(f) {
			t.Errorf("%s: the assertion panicked", name)
		}
	}
	m.Unlock()
	rw.Unlock()
	rw.RLock()
	if panics(func() { AssertRLocked(&rw) }) {
		t.Error("RWMutex held to read: AssertRLocked panicked")
	}
	rw.RUnlock()
	for name, f := range map[string]func(){
		"Mutex free":   func() { AssertLocked(&m) },
		"RWMutex free": func() { AssertRLocked(&rw) },
	} {
		if got := panics(f); got != enabled {
			t.Errorf("%s: panicked = %v, want %v", name, got, enabled)
		}
	}
	// The checks leave the locks as they found them.
	if !m.TryLock() || !rw.TryLock() {
		t.Error("an assertion left a lock held")
	}
}

func BenchmarkAssertLocked(b *testing.B) {
	var m sync.Mutex
	m.Lock()
	for b.Loop() {
		AssertLocked(&m)
	}
}
