// Package callline is what `nerve call` says and sends, shared by the
// front (cmd/nerve) and the whole program (internal/cli): the Commander
// line its words make, the node that line names, and the lines it shows
// for a call's progress. It links only pkg/api and the standard library.
package callline

import (
	"fmt"
	"strings"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Node returns the node a Commander line starting with '@' names, or ""
// for any other line.
func Node(line string) string {
	if !strings.HasPrefix(line, "@") {
		return ""
	}
	end := strings.IndexAny(line[1:], " \t\n.?")
	if end < 0 {
		return line[1:]
	}
	return line[1 : 1+end]
}

// Join joins nerve call's words into a Commander line that the
// Commander splits into the same words: each word is quoted for a shell
// where it needs it (in single quotes; a quote inside is closed, escaped
// and reopened), which both the Commander's
// key=value reader and a bash node read back as the one word it was. The
// first word, a lone ?, and JSON ({…} or […]) stay as they are; in
// key=value only the value is quoted. A line with one word after the node
// is left as it is.
func Join(words []string) string {
	if len(words) <= 2 {
		// One word after the node: the person quoted the whole rest for
		// nerve (`nerve call @bash 'ls | wc -l'`, `nerve call @echo "a b"`):
		// it is the text (or JSON) as it is.
		return strings.TrimSpace(strings.Join(words, " "))
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case i == 0, w == "?", strings.HasPrefix(w, "{"), strings.HasPrefix(w, "["):
			b.WriteString(w)
		default:
			if k, v, ok := strings.Cut(w, "="); ok && isKey(k) {
				b.WriteString(k)
				b.WriteByte('=')
				if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
					b.WriteString(v)
				} else {
					b.WriteString(Quote(v))
				}
				continue
			}
			b.WriteString(Quote(w))
		}
	}
	return strings.TrimSpace(b.String())
}

// isKey reports whether k can be the key of a key=value word.
func isKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Quote quotes w for a POSIX shell unless every byte of it is plain
// (a trailing ? is left alone: `@fs read_file?` asks for help).
func Quote(w string) string {
	if w == "" {
		return "''"
	}
	plain := true
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 || strings.IndexByte("_-./:@%+,=^", c) >= 0 || c == '?' && i == len(w)-1 {
			continue
		}
		plain = false
		break
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// Event is the line `nerve call` shows on stderr for a progress or log
// event of a call to node, and false for any other event.
func Event(node string, ev api.CallEvent) (string, bool) {
	switch ev.Kind {
	case api.EventProgress:
		if ev.Total > 0 {
			return fmt.Sprintf("@%s: %.0f/%.0f %s\n", node, ev.Progress, ev.Total, ev.Message), true
		}
		return fmt.Sprintf("@%s: %v %s\n", node, ev.Progress, ev.Message), true
	case api.EventLog:
		return fmt.Sprintf("@%s %s: %s\n", node, ev.Level, strings.TrimSpace(string(ev.Data))), true
	}
	return "", false
}
