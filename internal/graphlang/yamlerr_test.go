package graphlang

import (
	"strings"
	"testing"
)

// TestYAMLErrorPlace: a syntax error is reported at the line and column of
// the mistake (issue 17, item 7): the YAML reader said "line 1" for a } missing
// on line 2, with no column.
func TestYAMLErrorPlace(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"steps:\n  a: {call: x.y,\n     args: {text: x}\n  b: {call: x.y}\n", "2:6: reading the graph: the { opened here is never closed"},
		{"steps:\n  a: [1, 2\n  b: 3\n", "2:6: reading the graph: the [ opened here is never closed"},
		{"steps: {a: {call: x.y}\n", "1:8: reading the graph: the { opened here is never closed"},
		{"steps:\n  a: {call: x.y]\n", "2:16: reading the graph: ] here closes the { opened at 2:6"},
		{"steps:\n  a: {call: x.y}\n\tb: x\n", "3:1: reading the graph: found character that cannot start any token"},
		{"steps:\n  a: b: c\n", "2:3: reading the graph: mapping values are not allowed"},
		{"steps:\n  a: {call: \"x.y}\", args: {text: '{'}}\n  # a { in a comment\n  b: {call: x.y\n", "4:6: reading the graph: the { opened here is never closed"},
	} {
		_, err := Parse([]byte(tt.src))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%q):\n%v\nwant it to start with %q", tt.src, err, tt.want)
		}
	}
}
