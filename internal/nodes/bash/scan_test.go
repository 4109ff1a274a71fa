package bash

import (
	"fmt"
	"strings"
	"testing"
)

func TestScannerSplitsTextAndMarkers(t *testing.T) {
	tag := "TAGxyz"
	stream := "hello\n" + tag + "S 3\n" + "out" + tag + "J" + "123\n" + tag + "E 3 2\n" + "bg" + tag + "Y 4\n" + "TAG" + "x not a marker" + tag + "Q\n"
	want := "text(hello\\n) S3 text(out) J text(123\\n) E3/2 text(bg) Y4 text(TAGx not a marker" + tag + "Q\\n\\n)"
	// Every way of cutting the stream into two reads must give the same result.
	for cut := 0; cut <= len(stream); cut++ {
		s := &scanner{tag: []byte(tag)}
		var got []string
		var pending strings.Builder
		flush := func() {
			if pending.Len() > 0 {
				got = append(got, "text("+strings.ReplaceAll(pending.String(), "\n", "\\n")+")")
				pending.Reset()
			}
		}
		text := func(b []byte) { pending.Write(b) }
		mark := func(m marker) {
			flush()
			switch m.kind {
			case markEnd:
				got = append(got, fmt.Sprintf("E%d/%d", m.seq, m.status))
			case markJobs:
				got = append(got, "J")
			default:
				got = append(got, fmt.Sprintf("%c%d", m.kind, m.seq))
			}
		}
		s.feed([]byte(stream[:cut]), text, mark)
		s.feed([]byte(stream[cut:]), text, mark)
		s.feed([]byte("\n"), text, mark) // the tail of the stream is text once a newline follows
		flush()
		if g := strings.Join(got, " "); g != want {
			t.Fatalf("cut at %d:\n got %s\nwant %s", cut, g, want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		binary bool
		want   string
	}{
		{10000000, false, "10.0 MB"},
		{1 << 20, true, "1.0 MiB"},
		{512, true, "512 bytes"},
		{1536, true, "1.5 KiB"},
	} {
		if got := formatSize(tc.n, tc.binary); got != tc.want {
			t.Errorf("formatSize(%d, %v) = %q, want %q", tc.n, tc.binary, got, tc.want)
		}
	}
}
