package provider

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type sseEvent struct{ name, data string }

func readAll(t *testing.T, r io.Reader) ([]sseEvent, error) {
	t.Helper()
	var got []sseEvent
	err := readSSE(r, func(name string, data []byte) (bool, error) {
		got = append(got, sseEvent{name, string(data)})
		return false, nil
	})
	return got, err
}

// TestReadSSE: the edges of the format that both providers' streams pass
// through — fed one byte at a time, so every line break also falls
// between two reads.
func TestReadSSE(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []sseEvent
	}{
		{"lf", "event: a\ndata: 1\n\ndata: 2\n\n", []sseEvent{{"a", "1"}, {"", "2"}}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []sseEvent{{"a", "1"}, {"", "2"}}},
		{"cr alone", "event: a\rdata: 1\r\rdata: 2\r\r", []sseEvent{{"a", "1"}, {"", "2"}}},
		{"multi-line data joined with LF", "data: {\"a\":\ndata: 1}\n\n", []sseEvent{{"", "{\"a\":\n1}"}}},
		{"comments, ids, retry and unknown fields skipped", ": keep-alive\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n:\n\n", []sseEvent{{"", "x"}}},
		{"no space after the colon", "event:a\ndata:x\n\n", []sseEvent{{"a", "x"}}},
		{"a field with no colon is an empty value", "data\ndata: x\n\n", []sseEvent{{"", "x"}}},
		{"an event with no data is not dispatched, its name forgotten", "event: ping\n\ndata: x\n\n", []sseEvent{{"", "x"}}},
		{"the end of the stream ends the last event", "data: x", []sseEvent{{"", "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, iotest.OneByteReader(strings.NewReader(tc.stream)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestReadSSELimits: a line, or an event's data, over the limit is an
// error naming it, after the events before it; a lost connection is a
// transport error (retried).
func TestReadSSELimits(t *testing.T) {
	long := strings.Repeat("x", maxSSEEvent+1)
	got, err := readAll(t, strings.NewReader("data: before\n\ndata: "+long+"\n\n"))
	if err == nil || !strings.Contains(err.Error(), "a line of the stream is over 16 MiB") {
		t.Errorf("a line over the limit: %v", err)
	}
	if len(got) != 1 || got[0].data != "before" {
		t.Errorf("events before the long line: %q", got)
	}
	half := strings.Repeat("x", maxSSEEvent/2)
	_, err = readAll(t, strings.NewReader("data: "+half+"\ndata: "+half+"\ndata: x\n\n"))
	if err == nil || !strings.Contains(err.Error(), "an event of the stream is over 16 MiB") {
		t.Errorf("an event over the limit: %v", err)
	}
	_, err = readAll(t, io.MultiReader(strings.NewReader("data: x\n"), iotest.ErrReader(io.ErrUnexpectedEOF)))
	var te *transportError
	if !errors.As(err, &te) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a lost connection: %v (%T), want a transport error", err, err)
	}
}
