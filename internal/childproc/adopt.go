package childproc

import "sync"

// starting is held for reading by Start from before it forks a child
// until the child and its lifeline are registered, and for writing by the
// reaper while it tells adopted processes from children of its own
// (adopt_linux.go).
var starting sync.RWMutex

// known holds the pids of the children Start started (and their
// lifelines) until they are reaped by their own Wait.
var known struct {
	// mu guards pids.
	mu   sync.Mutex
	pids map[int]bool
}

func register(pid int) {
	if pid <= 0 {
		return
	}
	known.mu.Lock()
	defer known.mu.Unlock()
	if known.pids == nil {
		known.pids = map[int]bool{}
	}
	known.pids[pid] = true
}

func unregister(pid int) {
	known.mu.Lock()
	defer known.mu.Unlock()
	delete(known.pids, pid)
}

func isKnown(pid int) bool {
	known.mu.Lock()
	defer known.mu.Unlock()
	return known.pids[pid]
}
