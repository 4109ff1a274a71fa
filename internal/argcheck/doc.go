// Package argcheck checks a tool call's JSON arguments against the tool's
// input schema before the call is sent, with jsonschema-go (as the MCP Go
// SDK's server checks its own tools), and explains a failure in terms of
// argument names: what was expected, what was given, did you mean.
//
// A Schema is read and resolved once per tool and kept beside it (the
// session's tool cache does); Validate reads it for one call (the graph
// kind's checks). It imports pkg/api (ErrBadArgs, which every failure
// wraps) and internal/suggest; pkg/session and the node kinds import it.
package argcheck
