package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/msglimit"
)

// What a client may send in one message, and how nerve refuses the rest.
// The SDK ends the whole connection on a message it cannot take (nested
// over 1,000 levels, over its line length, not JSON-RPC, JSON-RPC after a
// value on the same line), so the server reads each message first and
// answers one it refuses with a JSON-RPC error on that request alone
// (issue 27 item 2: one tools/call whose arguments nested 1,001 deep ended
// the `nerve mcp serve` session).

// JSON-RPC 2.0's codes for a message that cannot be taken.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// StdioTransport is the transport of an MCP client that speaks on r and w
// (the connection `nerve mcp serve` relays), MCP's stdio framing: one
// JSON-RPC message per line. Each line is read through a
// msglimit.Reader and decoded once, as the SDK decodes (jsonrpc.
// DecodeMessage); one nerve refuses — too big, nested too deep, not JSON,
// not JSON-RPC, a batch — gets a JSON-RPC error for its id (a
// notification is dropped with a log line) and the session lives on. It
// takes no JSON-RPC batches, which MCP left in 2025-06-18.
func StdioTransport(r io.ReadCloser, w io.WriteCloser, log *zap.Logger) mcp.Transport {
	if log == nil {
		log = zap.NewNop()
	}
	return &stdioTransport{r: r, w: w, log: log}
}

type stdioTransport struct {
	r   io.ReadCloser
	w   io.WriteCloser
	log *zap.Logger
}

// Connect starts the connection's reader, which ends when r does; Close
// closes r.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{r: t.r, w: t.w, log: t.log, msgs: make(chan msgOrErr), closed: make(chan struct{})}
	lr := msglimit.NewReader(t.r, &msglimit.Options{Refused: c.refused, Check: c.check})
	go func() { c.deliver(msgOrErr{err: lr.Drain()}) }()
	return c, nil
}

// msgOrErr is what the reader delivers: a message, or the error that
// ended the stream.
type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is an mcp.Connection on MCP's stdio framing that answers what
// it refuses itself.
type stdioConn struct {
	r         io.ReadCloser
	log       *zap.Logger
	msgs      chan msgOrErr
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error

	// wmu serialises writes: a message the SDK sends and an answer to a
	// refused one are each one Write, never interleaved.
	wmu sync.Mutex
	w   io.WriteCloser
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case m := <-c.msgs:
		return m.msg, m.err
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	return c.write(append(data, '\n'))
}

func (c *stdioConn) write(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(line)
	return err
}

// Close ends the connection; the reader ends with r. Safe twice.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// deliver hands m to Read, unless the connection is closed.
func (c *stdioConn) deliver(m msgOrErr) {
	select {
	case c.msgs <- m:
	case <-c.closed:
	}
}

// answer sends the client an error response to id (null when unknown).
func (c *stdioConn) answer(id json.RawMessage, code int, msg string) {
	if err := c.write(append(errorResponse(id, code, msg), '\n')); err != nil {
		c.log.Debug("answering a refused message", zap.Error(err))
	}
}

// refuse answers a message nerve refuses, of which it knows id (nil: not
// read) and whether it has a method: a notification (a method, no id) is
// dropped with a log line; an answer to the server's own request (an id,
// no method) fails that request; anything else gets an error for its id,
// or for null when the id could not be read, as JSON-RPC says.
func (c *stdioConn) refuse(id json.RawMessage, hasMethod bool, code int, why string) {
	switch {
	case hasMethod && id == nil && code != codeParseError:
		c.log.Warn("dropped a client's notification", zap.String("reason", why))
	case !hasMethod && id != nil:
		c.log.Info("refused a client's answer", zap.String("reason", why), zap.ByteString("id", id))
		if rid, err := jsonrpc.MakeID(idValue(id)); err == nil {
			c.deliver(msgOrErr{msg: &jsonrpc.Response{ID: rid, Error: &jsonrpc.Error{Code: int64(code), Message: why}}})
		}
	default:
		c.log.Info("refused a client's message", zap.String("reason", why), zap.ByteString("id", id))
		c.answer(id, code, why)
	}
}

// idValue is a JSON id as MakeID takes it.
func idValue(id json.RawMessage) any {
	var v any
	_ = json.Unmarshal(id, &v)
	return v
}

// refused answers a message over a limit.
func (c *stdioConn) refused(o *msglimit.Refused) []byte {
	c.refuse(o.ID, o.HasMethod, codeInvalidRequest, refusal(o))
	return nil
}

// refusal says why a message over a limit is refused and what to do.
func refusal(o *msglimit.Refused) string {
	what := "the request"
	if !o.HasMethod {
		what = "the answer"
	}
	if o.TooBig {
		return o.Problem(what) + ": send less"
	}
	return o.Problem(what) + ": send it less deeply nested"
}

// check decodes a message within the limits and hands it to Read, or
// answers why not.
func (c *stdioConn) check(line []byte) []byte {
	msg := bytes.TrimSpace(line)
	m, code, why := decode(msg)
	if why == "" {
		c.deliver(msgOrErr{msg: m})
		return nil
	}
	var sc msglimit.Scanner
	sc.Feed(msg)
	c.refuse(sc.ID(), sc.HasMethod(), code, why)
	return nil
}

// decode decodes msg as the SDK does (jsonrpc.DecodeMessage) or says why
// it cannot be taken, with the JSON-RPC code.
func decode(msg []byte) (m jsonrpc.Message, code int, why string) {
	if !json.Valid(msg) {
		return nil, codeParseError, "parse error: the message is not JSON; send one JSON-RPC message per line"
	}
	if msg[0] == '[' {
		return nil, codeInvalidRequest, "invalid request: nerve takes no JSON-RPC batches (MCP has none since 2025-06-18); send each message on its own line"
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return nil, codeInvalidRequest, fmt.Sprintf("invalid request: %v", err)
	}
	return m, 0, ""
}

// errorResponse is a JSON-RPC error response to id (null when nil).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	text, _ := json.Marshal(msg)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, text)
}

// guardPOST reads a POST's body (a JSON-RPC message or batch) and
// answers one over the size limit (413) or nested too deep (400) with a
// JSON-RPC error for its id, as the SDK answers the requests it refuses
// itself. What it lets through goes to the SDK on the writer it returns,
// which turns the SDK's plain-text 400 for a message it cannot take (not
// JSON, not JSON-RPC) into a JSON-RPC error for the request's id: a
// client can tie that to its request (the Go SDK's client gave up its
// session on the text). Call finish once the SDK is done. ok is false
// when the request was answered here.
func guardPOST(w http.ResponseWriter, r *http.Request, limit int64, log *zap.Logger) (_ http.ResponseWriter, finish func(), ok bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return w, func() {}, true
	}
	var sc msglimit.Scanner
	body, err := io.ReadAll(io.TeeReader(io.LimitReader(r.Body, limit+1), scanWriter{&sc}))
	var mbe *http.MaxBytesError
	tooBig := int64(len(body)) > limit || errors.As(err, &mbe)
	if err != nil && !tooBig {
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return w, nil, false
	}
	o := &msglimit.Refused{Size: max(int64(len(body)), r.ContentLength), Depth: sc.MaxDepth(), TooBig: tooBig,
		Limit: int(limit), ID: sc.ID(), HasMethod: sc.HasMethod()}
	if !o.TooBig && o.Depth <= msglimit.MaxDepth {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		jw := &jsonErrors{ResponseWriter: w, id: o.ID, body: body}
		return jw, jw.finish, true
	}
	why := refusal(o)
	log.Info("refused a client's message", zap.String("reason", why), zap.ByteString("id", o.ID))
	if !o.HasMethod && o.ID != nil {
		// An answer to a request of the server's: that request fails, and
		// the client is told its answer was taken (202), as the SDK does.
		rep := errorResponse(o.ID, codeInvalidRequest, why)
		r.Body = io.NopCloser(bytes.NewReader(rep))
		r.ContentLength = int64(len(rep))
		return w, func() {}, true
	}
	status := http.StatusBadRequest
	if o.TooBig {
		status = http.StatusRequestEntityTooLarge
	}
	writeRPCError(w, status, o.ID, codeInvalidRequest, why)
	return w, nil, false
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, why string) {
	w.Header().Del("X-Content-Type-Options")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorResponse(id, code, why))
}

// jsonErrors holds back a plain-text 400 the SDK writes for a POST and
// writes it as a JSON-RPC error for the request's id instead (finish).
// Everything else passes; Unwrap lets the SDK's ResponseController reach
// the connection (flushing an event stream).
type jsonErrors struct {
	http.ResponseWriter
	id   json.RawMessage
	body []byte
	held bool
	text bytes.Buffer
}

func (j *jsonErrors) WriteHeader(status int) {
	if status == http.StatusBadRequest && strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
		j.held = true
		return
	}
	j.ResponseWriter.WriteHeader(status)
}

func (j *jsonErrors) Write(p []byte) (int, error) {
	if j.held {
		return j.text.Write(p)
	}
	return j.ResponseWriter.Write(p)
}

func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }

func (j *jsonErrors) finish() {
	if !j.held {
		return
	}
	code, why := codeInvalidRequest, "invalid request: "+strings.TrimSpace(j.text.String())
	if !json.Valid(j.body) {
		code, why = codeParseError, "parse error: the message is not JSON ("+strings.TrimSpace(j.text.String())+")"
	}
	writeRPCError(j.ResponseWriter, http.StatusBadRequest, j.id, code, why)
}

// scanWriter feeds what is written to a Scanner.
type scanWriter struct{ sc *msglimit.Scanner }

func (s scanWriter) Write(p []byte) (int, error) {
	s.sc.Feed(p)
	return len(p), nil
}
