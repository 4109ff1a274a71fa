package metrics

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// contentType is the text exposition format's
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// text builds a page in the text exposition format. Names and label names
// are this package's constants; label values and help are escaped as the
// format says, so a node id or tool name is data in it, never syntax.
type text struct{ b bytes.Buffer }

// family starts a metric family: its HELP and TYPE lines.
func (t *text) family(name, typ, help string) {
	t.b.WriteString("# HELP " + name + " " + helpEscaper.Replace(help) + "\n")
	t.b.WriteString("# TYPE " + name + " " + typ + "\n")
}

// sample writes one line: name{names[i]="values[i]",…} v.
func (t *text) sample(name string, names, values []string, v float64) {
	t.b.WriteString(name)
	if len(names) > 0 {
		t.b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				t.b.WriteByte(',')
			}
			t.b.WriteString(n + `="` + valueEscaper.Replace(values[i]) + `"`)
		}
		t.b.WriteByte('}')
	}
	t.b.WriteString(" " + formatFloat(v) + "\n")
}

var (
	// A label value escapes backslash, double quote and line feed.
	valueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	// Help text escapes backslash and line feed.
	helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
