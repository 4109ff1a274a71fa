package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestTextEscapes: a label value or help text with the format's own
// characters (an MCP server names its tools as it likes) stays data:
// Prometheus's parser reads back what was written.
func TestTextEscapes(t *testing.T) {
	odd := "a\"b\\c\nd} x=\"1\"\n# TYPE"
	var tx text
	tx.family("nerve_test_total", "counter", "help with \\ and\nnew line")
	tx.sample("nerve_test_total", []string{"tool"}, []string{odd}, 3)
	h := &histogram{}
	h.observe(0.002)
	h.observe(1000)
	tx.family("nerve_test_seconds", "histogram", "h")
	h.write(&tx, "nerve_test_seconds", []string{"tool"}, []string{odd})
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(tx.b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, tx.b.String())
	}
	f := fams["nerve_test_total"]
	if f.GetHelp() != "help with \\ and\nnew line" || f.Metric[0].Label[0].GetValue() != odd || f.Metric[0].Counter.GetValue() != 3 {
		t.Errorf("read back: %v", f)
	}
	hist := fams["nerve_test_seconds"].Metric[0].Histogram
	if hist.GetSampleCount() != 2 || hist.GetSampleSum() != 1000.002 || hist.Bucket[2].GetCumulativeCount() != 1 || hist.Bucket[len(hist.Bucket)-2].GetCumulativeCount() != 1 || hist.Bucket[len(hist.Bucket)-1].GetCumulativeCount() != 2 {
		t.Errorf("histogram read back: %v", hist)
	}
}
