package mcpnode

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/nerve-dev/nerve/internal/msglimit"
)

// Limits on one message a server sends; see docs/mcp.md and
// internal/msglimit, which reads one message at a time.
const (
	// DefaultMaxMessage bounds one message (a stdio line, an HTTP body or
	// an SSE event's data) in bytes.
	DefaultMaxMessage = msglimit.MaxMessage
	// MaxDepth bounds how deep a message nests (objects and arrays, the
	// JSON-RPC envelope included). The SDK refuses deeper messages by
	// ending the connection, so nerve refuses them first, one message at
	// a time.
	MaxDepth = msglimit.MaxDepth
)

// codeOverLimit is the JSON-RPC error code of the answer nerve makes up for
// a result over a limit; call.go recognises it.
const codeOverLimit = -32050

// overLimit is a message a guard refused.
type overLimit struct{ *msglimit.Refused }

// reason says what was wrong and what to do, for the caller.
func (o overLimit) reason() string {
	if o.HasMethod {
		return o.Problem("the server's message") + "; " + o.fix()
	}
	return o.Problem("the result") + "; " + o.fix()
}

func (o overLimit) fix() string {
	if o.TooBig {
		return "ask the tool for less"
	}
	return "ask the tool for a flatter answer"
}

// errorResponse is a JSON-RPC error answer to the message's request id, or
// nil when the id is unknown.
func (o overLimit) errorResponse() []byte {
	if o.ID == nil {
		return nil
	}
	msg, _ := json.Marshal(o.reason())
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, o.ID, codeOverLimit, msg)
}

// newGuard reads newline-delimited JSON-RPC messages (MCP's stdio framing,
// or the lines of a Server-Sent Events stream) through a msglimit.Reader:
// a message over the size or depth limit is refused alone, and a refused
// answer to one of nerve's requests becomes a JSON-RPC error for its id
// (refused's choice), so that the call fails and the connection lives on.
// Everything else passes unchanged, garbage included: the SDK reports it
// as before. onEvent, if set, is msglimit.Options.OnEvent (SSE); check,
// if set, msglimit.Options.Check.
func newGuard(r io.Reader, limit int, sse bool, refused func(overLimit) []byte, onEvent func([]byte), check func([]byte) []byte) *msglimit.Reader {
	return msglimit.NewReader(r, &msglimit.Options{Limit: limit, SSE: sse, OnEvent: onEvent, Check: check, Refused: func(o *msglimit.Refused) []byte {
		return refused(overLimit{o})
	}})
}

// liftCheck is liftMessage as a msglimit check: what the SDK would drop
// of tasks is kept in _meta (tasks.go); the stdio framing does the same
// in tapConn.
func liftCheck(msg []byte) []byte {
	if out := liftMessage(msg); out != nil {
		return out
	}
	return msg
}

// guardTransport bounds what an HTTP server sends: each response body that
// carries MCP messages (application/json, text/event-stream) is read
// through a guard, so a message over the limits fails its own request and
// the session lives on, as for stdio; and keeps what the SDK would drop
// of tasks (liftCheck).
//
// It also taps the event streams: each request or notification of the
// server's in an SSE event goes to tap before the SDK can read on, so the
// log messages and progress a server sends before a result reach the call
// before the call returns (the SDK's own handlers run on a goroutine of
// their own, and lost the race; issue 27).
type guardTransport struct {
	base  http.RoundTripper
	limit int
	tap   func(*jsonrpc.Request) // nil: none
}

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json", "text/event-stream":
		sse := ct == "text/event-stream"
		var onEvent func([]byte)
		if sse && t.tap != nil {
			onEvent = func(data []byte) {
				// The SDK's own decoder: what it would make of the event.
				if msg, err := jsonrpc.DecodeMessage(data); err == nil {
					if req, ok := msg.(*jsonrpc.Request); ok {
						t.tap(req)
					}
				}
			}
		}
		resp.Body = newGuard(resp.Body, t.limit, sse, func(o overLimit) []byte {
			if o.HasMethod {
				return nil // a request of the server's: dropped (it times out there)
			}
			return o.errorResponse()
		}, onEvent, liftCheck)
		if !sse {
			resp.ContentLength = -1 // the guard may change it
			resp.Header.Del("Content-Length")
		}
	}
	return resp, nil
}
