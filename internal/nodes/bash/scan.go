package bash

import (
	"bytes"
	"strconv"
)

// Marker kinds the shell prints, each as tag + kind byte + fields + '\n'
// (except markJobs, which has no fields and is followed by `jobs -p` lines).
const (
	markStart = 'S' // S seq: the command was read; the shell is now running it
	markJobs  = 'J' // J: the pids of the shell's background jobs follow
	markEnd   = 'E' // E seq status: the command ended with status
	markSync  = 'Y' // Y seq: the shell is at its prompt (startup, after an interrupt)
)

// marker is one parsed marker.
type marker struct {
	kind   byte
	seq    uint64
	status int
}

// maxMarkerLen bounds what follows a tag before its newline; anything longer
// is not a marker and is passed on as text.
const maxMarkerLen = 64

// scanner splits the shell's output stream into text and markers. Markers
// may be split across reads, so it keeps a short carry of bytes it could not
// classify yet. It is not safe for concurrent use.
type scanner struct {
	tag   []byte
	carry []byte
}

// feed scans p and calls text for plain output and mark for each marker, in
// stream order. The slices passed to text are only valid during the call.
func (s *scanner) feed(p []byte, text func([]byte), mark func(marker)) {
	buf := p
	if len(s.carry) > 0 {
		s.carry = append(s.carry, p...)
		buf = s.carry
	}
	keep := func(rest []byte) {
		// copy handles the overlap when rest lies inside s.carry.
		s.carry = append(s.carry[:0], rest...)
	}
	for {
		i := bytes.Index(buf, s.tag)
		if i < 0 {
			k := partialSuffix(buf, s.tag)
			if len(buf) > k {
				text(buf[:len(buf)-k])
			}
			keep(buf[len(buf)-k:])
			return
		}
		if i > 0 {
			text(buf[:i])
		}
		rest := buf[i+len(s.tag):]
		if len(rest) == 0 {
			keep(buf[i:])
			return
		}
		if rest[0] == markJobs {
			mark(marker{kind: markJobs})
			buf = rest[1:]
			continue
		}
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 && len(rest) <= maxMarkerLen {
			keep(buf[i:])
			return
		}
		m, ok := parseMarker(rest[:max(nl, 0)])
		if nl < 0 || !ok {
			// Not one of ours after all: pass the tag on as text.
			text(buf[i : i+len(s.tag)])
			buf = rest
			continue
		}
		mark(m)
		buf = rest[nl+1:]
	}
}

// parseMarker parses "S 12", "E 12 0" or "Y 12".
func parseMarker(b []byte) (marker, bool) {
	if len(b) < 3 || b[1] != ' ' {
		return marker{}, false
	}
	m := marker{kind: b[0]}
	fields := bytes.Fields(b[2:])
	want := 1
	if m.kind == markEnd {
		want = 2
	} else if m.kind != markStart && m.kind != markSync {
		return marker{}, false
	}
	if len(fields) != want {
		return marker{}, false
	}
	seq, err := strconv.ParseUint(string(fields[0]), 10, 64)
	if err != nil {
		return marker{}, false
	}
	m.seq = seq
	if want == 2 {
		st, err := strconv.Atoi(string(fields[1]))
		if err != nil {
			return marker{}, false
		}
		m.status = st
	}
	return m, true
}

// partialSuffix returns the length of the longest suffix of b that is a
// proper prefix of tag: bytes that may be the start of a marker.
func partialSuffix(b, tag []byte) int {
	for k := min(len(tag)-1, len(b)); k > 0; k-- {
		if bytes.Equal(b[len(b)-k:], tag[:k]) {
			return k
		}
	}
	return 0
}
