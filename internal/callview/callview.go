// Package callview words what a call reports while it runs the same way in
// the Commander (internal/repl) and on the command line (internal/cli): a
// graph step's line, a duration rounded for people, an error's first line.
// It is pure (no I/O); only internal/cli and internal/repl import it.
package callview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nerve-dev/nerve/pkg/api"
)

// GraphStepLine is one line for a graph's step event: "✓ read 12ms".
func GraphStepLine(data []byte) string {
	var ev api.StepEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return string(data)
	}
	took := ""
	if ev.Millis > 0 {
		took = " " + Duration(time.Duration(ev.Millis*float64(time.Millisecond)))
	}
	switch ev.State {
	case api.StepStarted:
		return "▸ " + ev.Step + " started"
	case api.StepFinished:
		return "✓ " + ev.Step + took
	case api.StepRetried:
		return fmt.Sprintf("↻ %s attempt %d after: %s", ev.Step, ev.Attempt, FirstLine(ev.Error))
	case api.StepSkipped:
		line := "⤼ " + ev.Step + " skipped"
		switch ev.Reason {
		case "when":
			line += " (when was false)"
		case "resumed":
			line += " (finished before; resumed)"
		case "on_error":
			line += " (failed; default used: " + FirstLine(ev.Error) + ")"
		}
		return line
	case api.StepFailed:
		return "✗ " + ev.Step + took + ": " + FirstLine(ev.Error)
	case api.StepAsked:
		return "? " + ev.Step + ": the question went to " + ev.Reason + ": answer it there (Ctrl-C here cancels the run)"
	}
	return ev.Step + " " + ev.State
}

// Duration rounds d for people: microseconds under a millisecond,
// milliseconds under a second, tenths of a second above.
func Duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// FirstLine is the first line of s, cut at 100 bytes.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return Clip(s, 100)
}

// Clip cuts s to at most n bytes and marks the cut with "…", on a rune
// boundary: a line cut inside a UTF-8 character showed a broken one
// (issue 27).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
