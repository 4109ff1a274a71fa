// Package commander parses and completes the lines a person types at the
// Commander prompt (`@fs read_file path=/tmp/a`, `:node ls`) and renders tool
// lists, tool help and call results for a terminal. It also puts the
// commands a message names in the syntax of where it is shown (REPLSyntax,
// ShellSyntax).
//
// It is pure: no I/O, no terminal, no network, no goroutines. Everything it
// needs to know about the session comes in through a Catalog (the REPL's
// cached tool lists) and Refs (the REPL's history of results). It sits in
// layer 1, imports only the standard library, the MCP SDK's types and
// internal/suggest, and only internal/repl (the REPL) and internal/cli
// (`nerve call`, completion) import it. The grammar as users see it is
// docs/commander.md.
package commander
