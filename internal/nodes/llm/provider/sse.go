package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxSSEEvent bounds one line, and the data of one event, of a streamed
// answer: a provider's chunks are small, and a stream that never ends a
// line must not take the daemon's memory.
const maxSSEEvent = 16 << 20

// readSSE calls handle with the event name and data of each event of a
// server-sent events stream (the HTML Living Standard's format, as both
// OpenAI-compatible and Anthropic servers send it), until the stream
// ends or handle says it is done. Lines end with LF, CRLF or CR; data
// lines of one event are joined with LF; comments (":…"), ids, retry and
// unknown fields are skipped; an event with no data is not dispatched. A
// lost connection is a *transportError; a line or an event over
// maxSSEEvent is an error.
func readSSE(r io.Reader, handle func(event string, data []byte) (done bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSEEvent)
	sc.Split(scanSSELines)
	var data bytes.Buffer
	event := ""
	dispatch := func() (bool, error) {
		defer func() { data.Reset(); event = "" }()
		payload := bytes.TrimSpace(data.Bytes())
		if len(payload) == 0 {
			return false, nil
		}
		return handle(event, payload)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if done, err := dispatch(); err != nil || done {
				return err
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data.Len()+1+len(value) > maxSSEEvent {
				return fmt.Errorf("an event of the stream is over %d MiB", maxSSEEvent>>20)
			}
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		case "event":
			event = string(bytes.TrimSpace(value))
		}
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("a line of the stream is over %d MiB", maxSSEEvent>>20)
	}
	// The end of the stream ends the event in progress.
	if _, derr := dispatch(); derr != nil {
		return derr
	}
	if err != nil {
		return &transportError{fmt.Errorf("reading the stream: %w", err)}
	}
	return nil
}

// scanSSELines is a bufio.SplitFunc for the lines of an SSE stream,
// which end with CRLF, LF or CR.
func scanSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	default:
		return 0, nil, nil // a CR last: is an LF next?
	}
}
