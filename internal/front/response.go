package front

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errResponse is an answer the front does not read; the core reads it
// (with net/http) from the bytes the front kept.
var errResponse = errors.New("an answer the front does not read")

// response is the head of an HTTP/1.1 response and a reader of its body.
// It reads only what nerve's daemon sends to a call (a status, a few
// headers, a body of known length or chunked); anything else is
// errResponse, and the core, which reads HTTP with net/http, takes over.
type response struct {
	status int
	header map[string]string // lower-case names
	body   io.Reader
}

const (
	maxHeadLine = 8 << 10
	maxHeaders  = 64
)

func readResponse(r *bufio.Reader) (*response, error) {
	line, err := headLine(r)
	if err != nil {
		return nil, err
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, ok := digits(code, 10)
	if proto != "HTTP/1.1" && proto != "HTTP/1.0" || !ok || len(code) != 3 || status < 200 || status > 599 {
		return nil, fmt.Errorf("%w: status line %q", errResponse, line)
	}
	resp := &response{status: int(status)}
	if resp.header, err = readHeader(r); err != nil {
		return nil, err
	}
	te, hasTE := resp.header["transfer-encoding"]
	cl, hasCL := resp.header["content-length"]
	switch {
	case te == "chunked":
		resp.body = &chunked{r: r}
	case hasTE:
		return nil, fmt.Errorf("%w: transfer-encoding %q", errResponse, te)
	case hasCL:
		n, ok := digits(cl, 10)
		if !ok {
			return nil, fmt.Errorf("%w: content-length %q", errResponse, cl)
		}
		resp.body = &sized{r: r, left: n}
	case status == 204 || status == 304:
		resp.body = strings.NewReader("")
	default:
		resp.body = r // to the end of the connection
	}
	return resp, nil
}

// readHeader reads header lines up to an empty line: names are tokens,
// each at most once, values without control bytes.
func readHeader(r *bufio.Reader) (map[string]string, error) {
	header := map[string]string{}
	for {
		line, err := headLine(r)
		if err != nil {
			return nil, err
		}
		if line == "" {
			return header, nil
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.ToLower(name)
		if _, dup := header[name]; !ok || dup || !token(name) || !fieldValue(value) || len(header) == maxHeaders {
			return nil, fmt.Errorf("%w: header %q", errResponse, line)
		}
		header[name] = strings.Trim(value, " \t")
	}
}

// token reports whether s is an HTTP token (RFC 9110 §5.6.2).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// fieldValue reports whether s has no control bytes but tabs.
func fieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// digits parses s, only digits of base 10 or 16, as a number below 2^60.
func digits(s string, base int64) (int64, bool) {
	if s == "" || len(s) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d int64
		switch {
		case '0' <= c && c <= '9':
			d = int64(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = int64(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

// headLine reads one line of a response's head, without its CRLF.
func headLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		part, err := r.ReadSlice('\n')
		b = append(b, part...)
		if len(b) > maxHeadLine {
			return "", fmt.Errorf("%w: a head line over %d bytes", errResponse, maxHeadLine)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// sized reads a body of a known length; one cut short is
// io.ErrUnexpectedEOF.
type sized struct {
	r    io.Reader
	left int64
}

func (s *sized) Read(p []byte) (int, error) {
	if s.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if errors.Is(err, io.EOF) && s.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// chunked reads a chunked body (RFC 9112 §7.1).
type chunked struct {
	r    *bufio.Reader
	left int64 // bytes left in the current chunk
	done bool
}

func (c *chunked) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		err = c.crlf()
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// next reads a chunk's size line; the last chunk's trailers are read
// as header lines.
func (c *chunked) next() error {
	line, err := headLine(c.r)
	if err != nil {
		return eofUnexpected(err)
	}
	size, _, _ := strings.Cut(line, ";")
	n, ok := digits(size, 16)
	if !ok {
		return fmt.Errorf("%w: chunk size %q", errResponse, line)
	}
	if n > 0 {
		c.left = n
		return nil
	}
	c.done = true
	_, err = readHeader(c.r)
	return eofUnexpected(err)
}

// crlf reads the CRLF that ends a chunk's data.
func (c *chunked) crlf() error {
	var b [2]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return eofUnexpected(err)
	}
	if b != [2]byte{'\r', '\n'} {
		return fmt.Errorf("%w: a chunk not ended by CRLF", errResponse)
	}
	return nil
}

func eofUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
