package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Errors callers test with errors.Is. Every error a Client returns for a
// daemon's answer is an *Error that matches one of these; its message is
// the daemon's, which says what to do.
var (
	ErrDaemonUnavailable = errors.New("the nerve daemon is not answering")
	ErrNodeNotFound      = errors.New("node not found")
	ErrSessionNotFound   = errors.New("session not found")
	ErrUnknownTool       = errors.New("unknown tool")
	ErrBadArgs           = errors.New("invalid arguments")
	ErrBadRequest        = errors.New("bad request")
	ErrExists            = errors.New("already exists")
	ErrNotReady          = errors.New("node is not ready")
	ErrStartFailed       = errors.New("node did not start")
	ErrCallFailed        = errors.New("call could not be made")
	ErrForbidden         = errors.New("refused by the daemon")
	ErrShuttingDown      = errors.New("the daemon is shutting down")
	ErrInternal          = errors.New("internal daemon error")
	ErrProtocol          = errors.New("unexpected answer from the daemon")
	ErrUnsupported       = errors.New("not supported by this kind of node")
	// ErrChanged: a ReplaceIf found the node changed since its tag was
	// read (HTTP 412).
	ErrChanged = errors.New("node was changed since it was read")
)

// Error is an error answered by the daemon.
type Error struct {
	// Status is the HTTP status (0 for an error line inside a stream).
	Status int
	// Code is the daemon's error code (api.Code…).
	Code string
	// Message is the daemon's message for people.
	Message string
	// Node is the node's Info when the error concerns one that exists (a
	// node that was added but did not start).
	Node *api.Info
	kind error
}

func (e *Error) Error() string { return e.Message }

// Unwrap lets errors.Is match the client sentinel and, where one exists,
// the node sentinel (api.ErrNotFound, which is api.ErrNotFound, …).
func (e *Error) Unwrap() []error {
	errs := []error{e.kind}
	switch e.kind {
	case ErrNodeNotFound:
		errs = append(errs, api.ErrNotFound)
	case ErrUnknownTool:
		errs = append(errs, api.ErrUnknownTool)
	case ErrBadArgs:
		errs = append(errs, api.ErrBadArgs)
	case ErrNotReady:
		errs = append(errs, api.ErrNotReady)
	}
	return errs
}

// kinds maps the daemon's error codes to sentinels.
var kinds = map[string]error{
	api.CodeBadRequest:      ErrBadRequest,
	api.CodeBadArgs:         ErrBadArgs,
	api.CodeForbidden:       ErrForbidden,
	api.CodeNodeNotFound:    ErrNodeNotFound,
	api.CodeSessionNotFound: ErrSessionNotFound,
	api.CodeUnknownTool:     ErrUnknownTool,
	api.CodeExists:          ErrExists,
	api.CodeNotReady:        ErrNotReady,
	api.CodeStartFailed:     ErrStartFailed,
	api.CodeCallFailed:      ErrCallFailed,
	api.CodeShuttingDown:    ErrShuttingDown,
	api.CodeStopping:        ErrShuttingDown,
	api.CodeInternal:        ErrInternal,
	api.CodeUnsupported:     ErrUnsupported,
	api.CodeChanged:         ErrChanged,
}

// byStatus is the fallback for an answer without a known code.
func byStatus(status int) error {
	switch status {
	case http.StatusBadRequest:
		return ErrBadRequest
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrProtocol
	case http.StatusConflict:
		return ErrExists
	case http.StatusPreconditionFailed:
		return ErrChanged
	case http.StatusBadGateway:
		return ErrCallFailed
	case http.StatusServiceUnavailable:
		return ErrShuttingDown
	default:
		return ErrInternal
	}
}

// errorFrom turns an error answer into a typed *Error: the one place that
// reads statuses and codes. status 0 means an error line of a stream.
func errorFrom(status int, e api.Error) *Error {
	kind, ok := kinds[e.Code]
	if !ok {
		kind = byStatus(status)
	}
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("%v (HTTP %d)", kind, status)
	}
	return &Error{Status: status, Code: e.Code, Message: msg, Node: e.Node, kind: kind}
}

// responseError reads an error response's body.
func responseError(resp *http.Response) *Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body api.ErrorBody
	if json.Unmarshal(data, &body) != nil || body.Error.Code == "" {
		body.Error = api.Error{Message: fmt.Sprintf("daemon answered %s: %s", resp.Status, truncate(string(data), 200))}
	}
	return errorFrom(resp.StatusCode, body.Error)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
