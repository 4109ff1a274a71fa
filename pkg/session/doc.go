// Package session holds a Session: a named set of nodes built from their
// specs through a factory registry, their lifecycle (add, remove, restart,
// close), cached tool lists, argument validation before every call, and an
// event stream of state changes, tool-list changes and calls.
//
// It knows node kinds only through the Registry. The daemon and the
// embedded Commander import it; node kinds never do.
//
// # Locks
//
// A Session's mutexes, with what each guards, in the order they may be
// taken (a lock is only ever taken while holding those above it):
//
//  1. saveMu serialises calls of Options.Save; the snapshot of the specs
//     is taken under it (then mu), so saves land in the order of the
//     changes.
//  2. mu (a RWMutex) guards the nodes by id, their order and each entry's
//     spec. It is never held while calling a node or publishing an event.
//
// Each entry (one node) has its own:
//
//   - startMu guards the start a request launched (launchStart); under it
//     the session takes startsMu, which guards the starts in flight and
//     startsDone (Close waits for them).
//   - toolsMu guards the cached tool list. It is held across the node's
//     ListTools, so a node must not move its state (whose observer, the
//     session's, takes toolsMu to drop the cache) while holding a lock its
//     ListTools takes.
//
// Leaves, under which nothing else is taken: settingsMu (the settings),
// the event hub's mu (subscribers; publish never blocks: a slow
// subscriber loses its oldest events), each entry's stateWatch and
// client environment, hooksProxy's (the hooks are called after it is
// released) and the Registry's.
package session
