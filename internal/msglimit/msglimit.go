// Package msglimit bounds one JSON-RPC message a peer sends — its size and
// how deep it nests — one message at a time and in bounded memory, so that
// a message over a limit fails alone where the MCP SDK would end the whole
// connection ("exceeded maximum nesting depth of 1000", a frame over its
// line length). It reads newline-delimited messages (MCP's stdio framing,
// or the data: lines of a Server-Sent Events stream) and follows a
// message's bytes as they go by (Scanner): nesting depth, and the
// top-level "id" and "method" keys wherever they are. It imports nothing
// of nerve's: the mcp kind guards what servers send it, the MCP server
// what clients send it.
package msglimit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Limits on one message.
const (
	// MaxMessage bounds one message (a stdio line, an HTTP body or an SSE
	// event's data) in bytes, as the SDK's own default line length does.
	MaxMessage = 16 << 20
	// MaxDepth bounds how deep a message nests (objects and arrays, the
	// JSON-RPC envelope included): the SDK refuses deeper messages by
	// ending the connection (its internal/json: "exceeded maximum nesting
	// depth of 1000").
	MaxDepth = 1000
)

// Refused is a message a Reader refused.
type Refused struct {
	Size   int64 // bytes
	Depth  int   // deepest nesting seen
	TooBig bool  // over the size limit (else too deep)
	Limit  int   // the size limit
	// ID is the message's id when it was read whole and is a string or a
	// number, else nil.
	ID json.RawMessage
	// HasMethod: a request or a notification (it has "method"), not a
	// response.
	HasMethod bool
	IsObject  bool
}

// Problem says what is wrong with the message, called what ("the
// result"): "the result was 20.0 MB, over nerve's limit of 16 MB for one
// message", or "… nests 1002 levels deep, over nerve's limit of 1000
// levels for one message". The caller adds what to do.
func (o *Refused) Problem(what string) string {
	if o.TooBig && o.Size <= int64(o.Limit) {
		return fmt.Sprintf("%s is over nerve's limit of %s for one message", what, megabytes(int64(o.Limit))) // read no further
	}
	if o.TooBig {
		return fmt.Sprintf("%s was %s, over nerve's limit of %s for one message", what, megabytes(o.Size), megabytes(int64(o.Limit)))
	}
	return fmt.Sprintf("%s nests %d levels deep, over nerve's limit of %d levels for one message", what, o.Depth, MaxDepth)
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

// Options configure NewReader.
type Options struct {
	// Limit bounds one message in bytes (0: MaxMessage).
	Limit int
	// SSE: the lines are Server-Sent Events fields; only data: lines hold
	// messages.
	SSE bool
	// Refused is told of each message over a limit; it returns the line to
	// hand on instead (without newline), or nil for none. Required.
	Refused func(*Refused) []byte
	// Check, if set, is told of each message within the limits (without
	// its newline; an SSE data: field's value) and returns what to hand on
	// instead (the message itself to pass it), or nil for none. Blank
	// lines pass without it.
	Check func(msg []byte) []byte
	// OnEvent, if set (SSE only), is given the data of each complete
	// event of type "message" that may hold a request or notification,
	// before the blank line that ends the event is handed on: the reader
	// (the SDK) cannot act on an event before it has that line, so what
	// OnEvent does comes first.
	OnEvent func(data []byte)
}

// Reader reads newline-delimited JSON-RPC messages and refuses, one at a
// time, those over the size or depth limit, in bounded memory: a line over
// the limit is read and discarded, never held. Everything else passes
// unchanged (or as Options.Check says).
type Reader struct {
	r       io.Reader
	limit   int
	sse     bool
	refused func(*Refused) []byte
	check   func([]byte) []byte

	rbuf       []byte
	rpos, rend int
	rerr       error

	line  []byte // the current line while within the limit
	size  int64  // bytes of the current line so far
	skip  int    // of them, the SSE field name ("data: ")
	over  bool   // the current line is over the limit: discarding
	start bool   // at the start of the line (SSE prefix not yet seen)
	data  bool   // SSE: the current line is a data: field
	sc    Scanner

	out    []byte
	outPos int

	// onEvent is Options.OnEvent. The fields below follow the SSE event
	// being read; ev is kept only while the event may be one for onEvent.
	onEvent func(data []byte)
	ev      []byte
	evLines int  // data lines so far
	evSkip  bool // not for onEvent: a result, too big, or refused
	evNamed bool // its type is other than "message"
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader, o *Options) *Reader {
	limit := o.Limit
	if limit <= 0 {
		limit = MaxMessage
	}
	g := &Reader{r: r, limit: limit, sse: o.SSE, refused: o.Refused, check: o.Check, rbuf: make([]byte, 64<<10), start: true}
	if o.SSE {
		g.onEvent = o.OnEvent
	}
	return g
}

func (g *Reader) Read(p []byte) (int, error) {
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

// Drain reads to the end of the stream for a Reader whose Check and
// Refused take every message themselves (they hand nothing on): it
// returns the error that ended the stream, io.EOF at its end.
func (g *Reader) Drain() error {
	_, err := io.Copy(io.Discard, g)
	if err == nil {
		err = io.EOF
	}
	return err
}

// Close closes the underlying reader when it is a Closer.
func (g *Reader) Close() error {
	if c, ok := g.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// consume takes the buffered bytes up to and including the next newline.
func (g *Reader) consume() {
	chunk := g.rbuf[g.rpos:g.rend]
	end := bytes.IndexByte(chunk, '\n')
	seg := chunk
	if end >= 0 {
		seg = chunk[:end]
	}
	g.rpos += len(seg)
	if g.start && g.sse {
		// The field name decides; it is at the start of the line, which
		// a Reader of SSE sees whole (the buffer is larger than "data:").
		g.data = bytes.HasPrefix(seg, []byte("data:"))
		if g.data {
			msg := bytes.TrimLeft(seg[len("data:"):], " ")
			g.skip = len(seg) - len(msg)
			g.sc.Feed(msg)
		}
	} else if !g.sse || g.data {
		g.sc.Feed(seg)
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
func (g *Reader) endLine(newline bool) {
	checked := !g.sse || g.data
	refused := g.over || (checked && g.sc.maxDepth > MaxDepth)
	if g.onEvent != nil {
		g.event(refused)
	}
	switch {
	case refused:
		o := &Refused{Size: g.size - int64(g.skip), Depth: g.sc.maxDepth, TooBig: g.over, Limit: g.limit,
			ID: g.sc.ID(), HasMethod: g.sc.hasMethod, IsObject: g.sc.isObject}
		if !checked {
			o.ID = nil // an over-long SSE field other than data: is dropped
		}
		if rep := g.refused(o); rep != nil {
			if g.sse {
				g.out = append(g.out, "data: "...)
			}
			g.out = append(append(g.out, rep...), '\n')
		}
	case g.check != nil && checked && len(bytes.TrimSpace(g.line[g.skip:])) > 0:
		if rep := g.check(g.line[g.skip:]); rep != nil {
			g.out = append(append(g.out, g.line[:g.skip]...), rep...)
			if newline {
				g.out = append(g.out, '\n')
			}
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
	g.sc = Scanner{}
}

// event follows the SSE event the line just read belongs to (the SSE
// framing of the WHATWG HTML standard, §9.2.6: data lines joined with a
// newline, an empty line ends the event, "event:" names its type), and
// gives onEvent what it asked for.
func (g *Reader) event(refused bool) {
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

// Scanner follows a JSON message as its bytes go by: how deep it nests,
// and its top-level "id" and "method" keys, wherever they are (the
// TypeScript SDK writes the id after the result). It does not validate;
// the SDK does. The zero value is ready to use.
type Scanner struct {
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

// Feed follows b, the next bytes of the message.
func (s *Scanner) Feed(b []byte) {
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

// MaxDepth is the deepest nesting seen.
func (s *Scanner) MaxDepth() int { return s.maxDepth }

// HasMethod reports whether the message has a top-level "method" key.
func (s *Scanner) HasMethod() bool { return s.hasMethod }

// ID returns the message's id as JSON when it was read whole and is a
// string or a number, else nil.
func (s *Scanner) ID() json.RawMessage {
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
