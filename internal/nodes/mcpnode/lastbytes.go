package mcpnode

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
)

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
