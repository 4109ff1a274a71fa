// Package bash implements the "bash" node kind: one persistent bash process
// per node behind a single tool, bash {command, timeout_s}. The working
// directory, variables, functions and aliases survive between calls.
//
// It is a node kind (layer 2): it imports pkg/node and the MCP vocabulary,
// and only pkg/session's factory registry should import it.
//
// How a call runs: the shell is an interactive bash (so that SIGINT aborts
// whatever it is doing and returns it to its prompt, as Ctrl-C does in a
// terminal) whose script comes from a pipe on stdin. For each call nerve
// writes the command, length-prefixed, on a private control pipe and one line
// on stdin that reads it, evals it with stdin from /dev/null and stderr joined
// to stdout, and prints a marker with the exit status. Markers carry a random
// per-shell tag that the shell stores only in escaped form, so a command that
// prints the shell's variables cannot forge one.
//
// # Locks
//
// A Node's locks, with what each guards, in the order they may be taken:
//
//  1. life serialises Start and Stop. Stop holds it while it waits for
//     the call in flight to return.
//  2. sem, a channel of one, is the call slot: one call at a time; a
//     second caller waits its turn (or its ctx).
//  3. endMu orders a call's last state change (READY or ERROR) against
//     the watcher that moves an idle node to ERROR when its shell dies;
//     the state machine is moved with it held.
//
// mu guards the shell and the interrupt of the call in flight, and is a
// leaf. A shell has closeMu (close runs once), then bgMu (the process
// groups of its background jobs, which a stop also kills); the stderr
// tail's mutex is a leaf. A call's scanner and sequence number are owned
// by the call in flight (it holds sem).
package bash

// Kind is the node kind this package builds.
const Kind = "bash"
