package mcpnode

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// stderrLines is how many lines of a child's stderr a node keeps.
const stderrLines = 50

// maxStderrLine bounds one kept line, so a child that floods stderr with
// one endless line costs a bounded amount of memory.
const maxStderrLine = 4096

// ring keeps the last lines written to it. It is safe for concurrent use.
type ring struct {
	mu    sync.Mutex // guards the fields below
	lines []string
	next  int
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, n)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
	r.mu.Unlock()
}

// Lines returns the kept lines, oldest first.
func (r *ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// readLines copies r into the ring line by line until EOF. Lines longer than
// maxStderrLine are cut, the rest of such a line dropped.
func (r *ring) readLines(src io.Reader) {
	br := bufio.NewReaderSize(src, maxStderrLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			s := strings.TrimRight(string(line), "\r")
			if isPrefix {
				s += " …"
			}
			r.add(s)
		}
		for isPrefix && err == nil { // drop the rest of an over-long line
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// tail formats the last n kept lines for an error message, or "" when there
// are none.
func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		b.WriteString("\n  | ")
		b.WriteString(l)
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nlast lines of its stderr:" + b.String()
}

// lastBytes remembers the last bytes that passed through a reader, so that
// a message about garbage on stdout can quote it.
type lastBytes struct {
	r  io.ReadCloser
	mu sync.Mutex // guards buf
	// buf is the start of the last chunk read, at most lastChunk bytes.
	buf []byte
}

const lastChunk = 4096

func (l *lastBytes) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		chunk := p[:n]
		if len(chunk) > lastChunk {
			chunk = chunk[:lastChunk]
		}
		l.mu.Lock()
		l.buf = append(l.buf[:0], chunk...)
		l.mu.Unlock()
	}
	return n, err
}

func (l *lastBytes) Close() error { return l.r.Close() }

// last quotes the first line of the last chunk that is not JSON — one
// chunk often holds a good message and the garbage after it — or, when
// every line parses, the chunk's first line.
func (l *lastBytes) last() string {
	l.mu.Lock()
	lines := strings.Split(string(l.buf), "\n")
	l.mu.Unlock()
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // cut off mid-line (or empty)
	}
	pick := ""
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if pick == "" {
			pick = line
		}
		if !json.Valid([]byte(line)) {
			pick = line
			break
		}
	}
	if len(pick) > 80 {
		pick = pick[:80] + "…"
	}
	return pick
}
