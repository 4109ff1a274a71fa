// Package syncs checks what package sync does not: that the mutex an
// `xxxLocked` function needs is held when it is called (tailscale's
// syncs.AssertLocked). Every such function of nerve starts with one of
// these.
//
// A mutex cannot say who holds it, only that someone does: TryLock fails
// on a held mutex, so a check that TryLock fails catches every call made
// without the lock — the mistake the suffix warns of — though not one made
// while another goroutine happens to hold it.
//
// The checks run in race-enabled builds, which every test run of CI is,
// and cost nothing otherwise: a broken invariant is a bug for the tests
// to find, never a daemon that panics in a person's session. It imports
// nothing of nerve's; anything may import it.
package syncs

import "sync"

// AssertLocked panics (in race-enabled builds) if m is not held.
func AssertLocked(m *sync.Mutex) {
	if enabled && m.TryLock() {
		m.Unlock()
		panic("syncs: a function that needs its mutex held was called without it")
	}
}

// AssertRLocked panics (in race-enabled builds) if rw is held neither for
// reading nor for writing.
func AssertRLocked(rw *sync.RWMutex) {
	if enabled && rw.TryLock() {
		rw.Unlock()
		panic("syncs: a function that needs its RWMutex held was called without it")
	}
}
