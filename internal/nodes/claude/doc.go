// Package claude is the claude node kind: one long-lived Claude Code process
// in its structured mode (`claude -p --input-format stream-json
// --output-format stream-json --verbose`) and its conversation, behind one
// tool, ask_claude {message}.
//
// A call writes one user message and reads events until the turn's result;
// every event on the way (text deltas, thinking, tool uses and results,
// usage, cost) goes to the call's observer. The Claude session id is kept in
// the node's Spec.State, so a restarted node resumes its conversation with
// --resume. MCP servers given in Options reach Claude through a config file
// written 0600 in a private folder and removed on stop (CleanupStale removes
// what a killed daemon left).
//
// Claude runs through internal/childproc: in its own process group, so a
// stop ends the MCP servers it started too, and tied to the daemon's life
// (Pdeathsig and a lifeline), so a killed daemon leaves none of them behind.
//
// It is a node kind (layer 2): it imports pkg/node, internal/mcpconf and
// internal/childproc, and only internal/nodes/all and the daemon import it.
package claude
