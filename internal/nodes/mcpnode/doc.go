// Package mcpnode is the "mcp" node kind: one node is one connection to an
// MCP server — a child process over stdio, a streamable HTTP endpoint or a
// legacy SSE endpoint — built on the official Go SDK client.
//
// A node speaks either era of MCP (protocol.go): 2026-07-28, stateless,
// where a server asks for input with input_required results, or
// 2025-11-25 and before, with initialize and requests from the server in
// the middle of a call; the version is negotiated as the SDK does it and
// remembered in the catalogue. A call its server turns into a task, in
// either of the two shapes of tasks, is followed to its end (tasks.go).
//
// The node lists every tool of the server (all pages) and calls them
// concurrently, each call with its own progress token, an idle timeout that
// progress extends and an absolute cap. Resources, templates, prompts,
// completion, subscriptions and logging are exported as methods on *Node
// for the session's MCP endpoint and the Commander. Faults (a command that
// is not found, a server that exits, hangs, or writes garbage on stdout)
// put the node in ERROR with a message that says what to do; a stdio child
// runs in its own process group and is never left behind.
//
// # Locks
//
// A Node has four mutexes; each is listed with what it guards, and they
// are taken only in this order:
//
//  1. lifeMu serialises Start, Stop, Restart, reconnect, Sync, the idle
//     stop and each attempt of the restart loop, and guards the OAuth
//     handler. It is held for a whole start (spawn, handshake, listing):
//     Stop first cancels a start in progress (startCancel, under mu), so
//     it never waits behind a server that hangs.
//  2. catalogMu serialises writing catalog.json.
//  3. mu (a RWMutex) guards the connection, the server's lists and
//     initialize result, the start and restart state (startCancel,
//     wantRunning, restartCancel, restarts, failStreak), the catalogue's
//     flags and onUpdated. Every call reads it; it is never held across
//     I/O.
//
// callsMu guards the calls in flight (by progress token) and is a leaf:
// nothing is taken while it is held. The node's state machine
// (node.Base) may be moved with lifeMu held, never with catalogMu, mu or
// callsMu held: its observers (the session) call back into the node.
// A stdio server's process has writeMu, a leaf that keeps whole messages
// on the child's stdin; closing stdin ends a write that blocks. The
// OAuth helpers' mutexes (persisting, keyJWTHandler) and lastBytes's are
// leaves of their own values.
//
// Some state needs no lock because one goroutine owns it or the runtime
// serialises it: the idle clock is one timer for the node's life (Reset
// and Stop are safe from any goroutine); the guard's answers to a
// server's refused requests go through a queue drained by one goroutine
// (internal/sendq), since the guard runs on the reader; the legacy
// sign-in probe (backcompat.go) is two atomics. Progress and log
// notifications of a stdio server are handed to the calls on the
// goroutine that reads the server, so an observer must never block
// (node.CallRequest.Observe).
//
// Only internal/nodes/all and tests import it; node kinds never import each
// other.
package mcpnode
