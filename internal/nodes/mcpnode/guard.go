package mcpnode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Limits on one message a server sends; see docs/mcp.md.
const (
	// DefaultMaxMessage bounds one message (a stdio line, an HTTP body or
	// an SSE event's data) in bytes.
	DefaultMaxMessage = 16 << 20
	// MaxDepth bounds how deep a message nests (objects and arrays, the
	// JSON-RPC envelope included). The SDK refuses deeper messages by
	// ending the connection (internal/json: "exceeded maximum nesting
	// depth of 1000"), so nerve refuses them first, one message at a time.
	MaxDepth = 1000
)

// codeOverLimit is the JSON-RPC error code of the answer nerve makes up for
// a result over a limit; call.go recognises it.
const codeOverLimit = -32050

// overLimit is a message a guard refused.
type overLimit struct {
	size     int64 // bytes
	depth    int   // deepest nesting seen
	tooBig   bool  // over the size limit (else too deep)
	limit    int   // the size limit
	id       json.RawMessage
	isCall   bool // a request or notification of the server's ("method")
	isObject bool
}

// reason says what was wrong and what to do, for the caller.
func (o *overLimit) reason() string {
	what := "the result"
	if o.isCall {
		what = "the server's message"
	}
	if o.tooBig {
		return fmt.Sprintf("%s was %s, over nerve's limit of %s for one message; ask the tool for less", what, megabytes(o.size), megabytes(int64(o.limit)))
	}
	return fmt.Sprintf("%s nests %d levels deep, over nerve's limit of %d levels for one message; ask the tool for a flatter answer", what, o.depth, MaxDepth)
}

func megabytes(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// errorResponse is a JSON-RPC error answer to the message's request id, or
// nil when the id is unknown.
func (o *overLimit) errorResponse() []byte {
	if o.id == nil {
		return nil
	}
	msg, _ := json.Marshal(o.reason())
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, o.id, codeOverLimit, msg)
}

// guard reads newline-delimited JSON-RPC messages (MCP's stdio framing,
// or the lines of a Server-Sent Events stream) and refuses, one at a time,
// those over the size or depth limit, in bounded memory: a line over the
// limit is read and discarded, never held. A refused answer to one of
// nerve's requests becomes a JSON-RPC error for its id, so that the call
// fails and the connection lives on. Everything else passes unchanged,
// garbage included: the SDK reports it as before.
type guard struct {
	r     io.Reader
	limit int
	sse   bool // lines are SSE fields; only data: lines hold messages
	// refused is told of every message refused; it returns the line to
	// hand on instead (without newline), or nil for none.
	refused func(*overLimit) []byte

	rbuf       []byte
	rpos, rend int
	rerr       error

	line  []byte // the current line while within the limit
	size  int64  // bytes of the current line so far
	skip  int    // of them, the SSE field name ("data: ")
	over  bool   // the current line is over the limit: discarding
	start bool   // at the start of the line (SSE prefix not yet seen)
	data  bool   // SSE: the current line is a data: field
	sc    scan

	out    []byte
	outPos int

	// onEvent, when set (SSE only), is given the data of each complete
	// event of type "message" that may hold a request or notification,
	// before the blank line that ends the event is handed on: the reader
	// (the SDK) cannot act on an event before it has that line, so what
	// onEvent does comes first. The fields below follow the event being
	// read; ev is kept only while the event may be one for onEvent.
	onEvent func(data []byte)
	ev      []byte
	evLines int  // data lines so far
	evSkip  bool // not for onEvent: a result, too big, or refused
	evNamed bool // its type is other than "message"
}

func newGuard(r io.Reader, limit int, sse bool, refused func(*overLimit) []byte) *guard {
	if limit <= 0 {
		limit = DefaultMaxMessage
	}
	return &guard{r: r, limit: limit, sse: sse, refused: refused, rbuf: make([]byte, 64<<10), start: true}
}

func (g *guard) Read(p []byte) (int, error) {
	for g.outPos == len(g.out) {
		g.out, g.outPos = g.out[:0], 0
		if g.rpos < g.rend {
			if g.sse && g.start && g.rerr == nil && g.rend-g.rpos < len("data: ") && bytes.IndexByte(g.rbuf[g.rpos:g.rend], '\n') < 0 {
				// Too little of the line to tell its field: read on.
				n := copy(g.rbuf, g.rbuf[g.rpos:g.rend])
				m, err := g.r.Read(g.rbuf[n:])
				g.rpos, g.rend, g.rerr = 0, n+m, err
				continue
			}
			g.consume()
			continue
		}
		if g.rerr != nil {
			if g.size > 0 || len(g.line) > 0 {
				g.endLine(false) // the last message may lack its newline
				continue
			}
			return 0, g.rerr
		}
		n, err := g.r.Read(g.rbuf)
		g.rpos, g.rend, g.rerr = 0, n, err
	}
	n := copy(p, g.out[g.outPos:])
	g.outPos += n
	return n, nil
}

// Close closes the underlying reader when it is a Closer.
func (g *guard) Close() error {
	if c, ok := g.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// consume takes the buffered bytes up to and including the next newline.
func (g *guard) consume() {
	chunk := g.rbuf[g.rpos:g.rend]
	end := bytes.IndexByte(chunk, '\n')
	seg := chunk
	if end >= 0 {
		seg = chunk[:end]
	}
	g.rpos += len(seg)
	if g.start && g.sse {
		// The field name decides; it is at the start of the line, which
		// a guard of SSE sees whole (the buffer is larger than "data:").
		g.data = bytes.HasPrefix(seg, []byte("data:"))
		if g.data {
			msg := bytes.TrimLeft(seg[len("data:"):], " ")
			g.skip = len(seg) - len(msg)
			g.sc.feed(msg)
		}
	} else if !g.sse || g.data {
		g.sc.feed(seg)
	}
	g.start = false
	g.size += int64(len(seg))
	if !g.over {
		if len(g.line)+len(seg) > g.limit {
			g.over, g.line = true, nil
		} else {
			g.line = append(g.line, seg...)
		}
	}
	if end >= 0 {
		g.rpos++
		g.endLine(true)
	}
}

// endLine hands on the line just read, or what replaces it.
func (g *guard) endLine(newline bool) {
	checked := !g.sse || g.data
	refused := g.over || (checked && g.sc.maxDepth > MaxDepth)
	if g.onEvent != nil {
		g.event(refused)
	}
	switch {
	case refused:
		o := &overLimit{size: g.size - int64(g.skip), depth: g.sc.maxDepth, tooBig: g.over, limit: g.limit,
			id: g.sc.id(), isCall: g.sc.hasMethod, isObject: g.sc.isObject}
		if !checked {
			o.id = nil // an over-long SSE field other than data: is dropped
		}
		if rep := g.refused(o); rep != nil {
			if g.sse {
				g.out = append(g.out, "data: "...)
			}
			g.out = append(append(g.out, rep...), '\n')
		}
	default:
		g.out = append(g.out, g.line...)
		if newline {
			g.out = append(g.out, '\n')
		}
	}
	if cap(g.line) > 1<<20 {
		g.line = nil // do not keep a large buffer for small messages
	}
	g.line, g.size, g.skip, g.over, g.start, g.data = g.line[:0], 0, 0, false, true, false
	g.sc = scan{}
}

// event follows the SSE event the line just read belongs to (the SSE
// framing of the WHATWG HTML standard, §9.2.6: data lines joined with a
// newline, an empty line ends the event, "event:" names its type), and
// gives onEvent what it asked for.
func (g *guard) event(refused bool) {
	line := bytes.TrimSuffix(g.line, []byte("\r"))
	switch {
	case g.data:
		g.evLines++
		switch {
		case g.evSkip:
		case refused:
			g.evSkip = true
		case g.evLines == 1 && g.sc.begun && g.sc.depth == 0 && !g.sc.hasMethod:
			// A whole message on one line that is neither a request nor a
			// notification (a result): not kept.
			g.evSkip = true
		case len(g.ev)+1+len(line)-g.skip > g.limit:
			g.evSkip = true
		default:
			if g.evLines > 1 {
				g.ev = append(g.ev, '\n')
			}
			g.ev = append(g.ev, line[g.skip:]...)
		}
	case g.size == 0 || (g.size == 1 && len(line) == 0):
		// An empty line: the event is complete.
		if !g.evSkip && !g.evNamed && len(g.ev) > 0 {
			g.onEvent(g.ev)
		}
		if cap(g.ev) > 64<<10 {
			g.ev = nil
		}
		g.ev, g.evLines, g.evSkip, g.evNamed = g.ev[:0], 0, false, false
	case !g.over && bytes.HasPrefix(line, []byte("event:")):
		name := bytes.TrimPrefix(line[len("event:"):], []byte(" "))
		g.evNamed = len(name) > 0 && string(name) != "message"
	}
}

// scan follows a JSON message as its bytes go by: how deep it nests, and
// its top-level "id" and "method" keys, wherever they are (the TypeScript
// SDK writes the id after the result). It does not validate; the SDK does.
type scan struct {
	depth, maxDepth int
	inStr, esc      bool
	begun           bool
	isObject        bool
	expectKey       bool // at depth 1 of an object: the next string is a key
	inKey           bool
	key             []byte // the key being read (at most 8 bytes kept)
	keyLong         bool
	lastKey         string
	capID           bool // reading the id's value
	idBuf           []byte
	idLong          bool
	idDone          bool
	hasMethod       bool
}

const maxIDLen = 128

func (s *scan) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if s.capID && s.depth >= 1 {
			if s.depth == 1 && !s.inStr && (c == ',' || c == '}') {
				s.capID, s.idDone = false, true
			} else if len(s.idBuf) < maxIDLen {
				s.idBuf = append(s.idBuf, c)
			} else {
				s.idLong = true
			}
		}
		if s.inStr {
			if !s.esc && !s.inKey && !s.capID {
				// Skip to the next quote or backslash: strings are most
				// of a big message.
				j := bytes.IndexAny(b[i:], `"\`)
				if j < 0 {
					return
				}
				i += j
				c = b[i]
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.inKey {
					s.inKey = false
					s.lastKey = ""
					if !s.keyLong {
						s.lastKey = string(s.key)
					}
				}
				continue
			}
			if s.inKey {
				if len(s.key) < 8 {
					s.key = append(s.key, c)
				} else {
					s.keyLong = true
				}
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && s.isObject && s.expectKey {
				s.inKey, s.expectKey, s.key, s.keyLong = true, false, s.key[:0], false
			}
		case '{', '[':
			if !s.begun {
				s.begun, s.isObject = true, c == '{'
			}
			s.depth++
			s.maxDepth = max(s.maxDepth, s.depth)
			if s.depth == 1 {
				s.expectKey = true
			}
		case '}', ']':
			if s.depth > 0 {
				s.depth--
			}
		case ',':
			if s.depth == 1 {
				s.expectKey = true
			}
		case ':':
			if s.depth == 1 && s.isObject {
				switch s.lastKey {
				case "id":
					s.capID, s.idBuf, s.idDone = true, s.idBuf[:0], false
				case "method":
					s.hasMethod = true
				}
			}
		}
	}
}

// id returns the message's id as JSON when it was read whole and is a
// string or a number, else nil.
func (s *scan) id() json.RawMessage {
	if !s.idDone || s.idLong {
		return nil
	}
	id := bytes.TrimSpace(s.idBuf)
	if len(id) == 0 || !json.Valid(id) {
		return nil
	}
	if c := id[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return nil
	}
	return append(json.RawMessage(nil), id...)
}

// guardTransport bounds what an HTTP server sends: each response body that
// carries MCP messages (application/json, text/event-stream) is read
// through a guard, so a message over the limits fails its own request and
// the session lives on, as for stdio.
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
		g := newGuard(resp.Body, t.limit, sse, func(o *overLimit) []byte {
			if o.isCall {
				return nil // a request of the server's: dropped (it times out there)
			}
			return o.errorResponse()
		})
		if sse && t.tap != nil {
			g.onEvent = func(data []byte) {
				// The SDK's own decoder: what it would make of the event.
				if msg, err := jsonrpc.DecodeMessage(data); err == nil {
					if req, ok := msg.(*jsonrpc.Request); ok {
						t.tap(req)
					}
				}
			}
		}
		resp.Body = g
		if !sse {
			resp.ContentLength = -1 // the guard may change it
			resp.Header.Del("Content-Length")
		}
	}
	return resp, nil
}
