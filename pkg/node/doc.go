// Package node defines the contract every nerve node kind implements: the
// Node interface, its State machine, the Spec a node is built from and the
// Env it lives in, tool naming (qualified "node.tool" and LLM-safe names), the
// Toolset built from a set of nodes, the text an LLM sees for a tool result,
// and the Caller of a call (who made it, for the call log). Checking a
// call's arguments against a tool's input schema is internal/argcheck's.
//
// It is the bottom layer of nerve: it imports only the standard library, the
// MCP Go SDK's vocabulary, zap and pkg/api. Every other package may import
// it.
package node
