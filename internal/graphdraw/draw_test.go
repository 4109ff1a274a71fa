package graphdraw

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/graphlang"
)

// A definition is drawn from the language alone: steps by depth, what
// each calls and waits for, as text, dot and Mermaid.
func TestDraw(t *testing.T) {
	d, err := graphlang.Parse([]byte("steps:\n  read: {call: fs.read}\n  stats: {call: sh.bash}\n  review: {call: ai.ask, after: [read, stats]}\n  ok: {ask: \"fine?\", after: review}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Text(&b, "review", d, map[string]string{"read": "finished 3ms"})
	want := "graph review: 4 steps\n├─ read    fs.read  [finished 3ms]\n└─ stats   sh.bash\n   ── review  ai.ask  ← read, stats\n      ── ok      ask  ← review\n"
	if b.String() != want {
		t.Errorf("Text:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := Dot("review", d); !strings.Contains(got, `"read" -> "review";`) || !strings.Contains(got, `"ok" [label="ok\nask"];`) {
		t.Errorf("Dot:\n%s", got)
	}
	if got := Mermaid(d); !strings.Contains(got, "  review --> ok\n") {
		t.Errorf("Mermaid:\n%s", got)
	}
}

// A script step is drawn as "script", after the steps it reads.
func TestDrawScript(t *testing.T) {
	d, err := graphlang.Parse([]byte("steps:\n  read: {call: fs.read}\n  sum: {script: 'result = len(steps[\"read\"][\"text\"])'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Text(&b, "g", d, nil)
	if want := "graph g: 2 steps\n── read  fs.read\n   ── sum   script  ← read\n"; b.String() != want {
		t.Errorf("Text:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := Mermaid(d); !strings.Contains(got, `sum["sum<br/>script"]`) {
		t.Errorf("Mermaid:\n%s", got)
	}
}

// TestDrawLongChain: a chain deeper than maxIndent is drawn at that
// indent past it, and says so; a 1,000-step chain drew lines of 3,000
// characters (issue 27 item 6).
func TestDrawLongChain(t *testing.T) {
	var src strings.Builder
	src.WriteString("steps:\n  s0: {call: a.b}\n")
	for i := 1; i < 1000; i++ {
		fmt.Fprintf(&src, "  s%d: {call: a.b, after: s%d}\n", i, i-1)
	}
	d, err := graphlang.Parse([]byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Text(&b, "chain", d, nil)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 1002 || lines[1] != "(1000 levels: those past 8 are drawn at 8; each step names the steps it waits for)" {
		t.Fatalf("%d lines, the second %q", len(lines), lines[1])
	}
	for _, l := range lines {
		if len(l) > 100 {
			t.Fatalf("a line of %d bytes: %q", len(l), l)
		}
	}
	if want := strings.Repeat("   ", 8) + "── s999  a.b  ← s998"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
}
