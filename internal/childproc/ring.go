package childproc

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// DefaultStderrLines is how many lines of stderr a Proc keeps unless told.
const DefaultStderrLines = 50

// MaxStderrLine bounds one kept line, so a child that floods stderr with
// one endless line costs a bounded amount of memory. A longer line is cut
// and marked " …".
const MaxStderrLine = 4096

// Ring keeps the last lines written to it. It is safe for concurrent use.
type Ring struct {
	mu    sync.Mutex // guards the fields below
	lines []string
	next  int
	full  bool
}

// NewRing returns a ring that keeps the last n lines (n ≥ 1).
func NewRing(n int) *Ring { return &Ring{lines: make([]string, max(n, 1))} }

// Add keeps line, dropping the oldest when the ring is full.
func (r *Ring) Add(line string) {
	r.mu.Lock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
	r.mu.Unlock()
}

// Lines returns the kept lines, oldest first.
func (r *Ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// ReadLines copies src into the ring line by line until EOF or an error.
// Lines longer than MaxStderrLine are cut, the rest of such a line dropped.
func (r *Ring) ReadLines(src io.Reader) {
	br := bufio.NewReaderSize(src, MaxStderrLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			s := strings.TrimRight(string(line), "\r")
			if isPrefix {
				s += " …"
			}
			r.Add(s)
		}
		for isPrefix && err == nil { // drop the rest of an over-long line
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// Tail formats the last n of lines for an error message, or "" when none
// of them has text.
func Tail(lines []string, n int) string {
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
