package callview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nerve-dev/nerve/pkg/api"
)

// TestGraphStepLine: each state of a graph step reads as the line a person
// sees above the status line (REPL) or on stderr (nerve call).
func TestGraphStepLine(t *testing.T) {
	for _, c := range []struct {
		ev   api.StepEvent
		want string
	}{
		{api.StepEvent{Step: "read", State: api.StepStarted}, "▸ read started"},
		{api.StepEvent{Step: "read", State: api.StepFinished, Millis: 12}, "✓ read 12ms"},
		{api.StepEvent{Step: "read", State: api.StepRetried, Attempt: 2, Error: "boom\nmore"}, "↻ read attempt 2 after: boom"},
		{api.StepEvent{Step: "read", State: api.StepSkipped, Reason: "when"}, "⤼ read skipped (when was false)"},
		{api.StepEvent{Step: "read", State: api.StepSkipped, Reason: "on_error", Error: "gone"}, "⤼ read skipped (failed; default used: gone)"},
		{api.StepEvent{Step: "read", State: api.StepFailed, Millis: 1500, Error: "exit 1"}, "✗ read 1.5s: exit 1"},
	} {
		data, err := json.Marshal(c.ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := GraphStepLine(data); got != c.want {
			t.Errorf("GraphStepLine(%s) = %q, want %q", data, got, c.want)
		}
	}
	if got := GraphStepLine([]byte("not json")); got != "not json" {
		t.Errorf("GraphStepLine of what is not an event = %q, want it as is", got)
	}
}

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{1234 * time.Nanosecond, "1µs"},
		{12345 * time.Microsecond, "12ms"},
		{1549 * time.Millisecond, "1.5s"},
	} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestFailedStepLineIsValidUTF8: a failed step's line is cut at a rune
// boundary; it was cut inside a UTF-8 character (issue 27 item 6).
func TestFailedStepLineIsValidUTF8(t *testing.T) {
	for pad := range 4 {
		msg := strings.Repeat("x", 95+pad) + strings.Repeat("é€😀", 10)
		data, _ := json.Marshal(api.StepEvent{Step: "s", State: api.StepFailed, Error: msg})
		line := GraphStepLine(data)
		if !utf8.ValidString(line) || !strings.HasSuffix(line, "…") {
			t.Errorf("failed step line %q is not valid UTF-8 ending with …", line)
		}
	}
}
