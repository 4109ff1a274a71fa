// Package commander parses and completes the lines a person types at the
// Commander prompt (`@fs read_file path=/tmp/a`, `:node ls`) and renders tool
// lists, tool help and call results for a terminal.
//
// It is pure: no I/O, no terminal, no network, no goroutines. Everything it
// needs to know about the session comes in through a Catalog (the REPL's
// cached tool lists) and Refs (the REPL's history of results). It sits in
// layer 5, imports only the standard library, the MCP SDK's types and
// internal/suggest, and
// only internal/cli (the REPL and `nerve call`) imports it. The grammar as
// users see it is docs/commander.md.
package commander
