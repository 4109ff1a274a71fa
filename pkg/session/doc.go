// Package session holds a Session: a named set of nodes built from their
// specs through a factory registry, their lifecycle (add, remove, restart,
// close), cached tool lists, argument validation before every call, and an
// event stream of state changes, tool-list changes and calls.
//
// It knows node kinds only through the Registry. The daemon and the
// embedded Commander import it; node kinds never do.
package session
