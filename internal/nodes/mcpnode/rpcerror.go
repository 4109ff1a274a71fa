package mcpnode

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// codeWords says in words what a JSON-RPC error code means (JSON-RPC 2.0,
// MCP, and the Go SDK's own), or "" for a code nobody defined. Messages
// keep the number too, for searching.
func codeWords(code int64) string {
	switch code {
	case -32700:
		return "parse error: the server could not read the request as JSON"
	case -32600:
		return "invalid request: the server did not accept the request's form"
	case -32601:
		return "method not found: the server does not offer this"
	case -32602:
		return "invalid params: the server rejected the arguments (check the tool's input schema with `?`)"
	case -32603:
		return "internal error: the server failed while handling it"
	case -32002:
		return "resource not found"
	case -32020:
		return "header mismatch: the HTTP headers disagree with the request body"
	case -32021:
		return "missing client capabilities: the server needs a capability nerve did not offer"
	case -32022:
		return "unsupported protocol version"
	case -32042:
		return "URL elicitation required: the server wants the person to open a URL first"
	case -32001:
		return "unknown error"
	case -32003, -32004:
		return "the connection is closing"
	case -32005:
		return "the request did not reach the server or got no usable answer (\"rejected by transport\")"
	}
	if code <= -32000 && code >= -32099 {
		return "a server error the server defines itself"
	}
	return ""
}

// describeRPCError is err's text, with a JSON-RPC error's code explained
// in words and kept as a number.
func describeRPCError(err error) string {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return err.Error()
	}
	words := codeWords(werr.Code)
	if words == "" {
		return fmt.Sprintf("%s (code %d)", werr.Message, werr.Code)
	}
	return fmt.Sprintf("%s (%s; code %d)", werr.Message, words, werr.Code)
}
