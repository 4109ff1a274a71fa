//go:build unix

package cli

import (
	"strings"
	"testing"
	"time"
)

// TestBinaryUsageMessages: a usage error that already says what to type
// is not followed by the generic usage line, and did-you-mean comes out
// whole: `nerve node ad` printed "for `nerve node`nerve  did you mean"
// (issue 27 item 6).
func TestBinaryUsageMessages(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "id")
	for _, tt := range []struct {
		args      []string
		want      string
		usageLine bool
	}{
		{[]string{"node", "ad"}, "nerve: unknown command \"ad\" for `nerve node` — did you mean \"add\"? (commands: add, ", false},
		{[]string{"nod", "ls"}, "nerve: unknown command \"nod\" — did you mean \"node\"? (commands: ", false},
		{[]string{"call", "@id", "identity"}, "missing required argument \"text\" (string) — add text=TEXT, or see `nerve call @id identity ?`", false},
		{[]string{"node", "add", "identity"}, "`nerve node add` needs KIND and NAME", true},
	} {
		_, errs, code := n.Run(tt.args...)
		name := strings.Join(tt.args, " ")
		if code != ExitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("nerve %s: exit %d, stderr %q; want exit %d and %q", name, code, errs, ExitUsage, tt.want)
		}
		if got := strings.Contains(errs, "\nusage: "); got != tt.usageLine {
			t.Errorf("nerve %s: usage line printed %v, want %v:\n%s", name, got, tt.usageLine, errs)
		}
		if strings.Contains(errs, "`nerve  ") || strings.Contains(errs, "`nerve did") {
			t.Errorf("nerve %s: garbled: %q", name, errs)
		}
	}
}

// TestTmuxUnknownCommandMessage: in the Commander, `:nod ls` suggests
// :node and names `:help` whole; it ended with "see `:-" (issue 27 item 6).
func TestTmuxUnknownCommandMessage(t *testing.T) {
	n := newRealNerve(t)
	term := n.Commander()
	term.Line(":nod ls")
	s := term.WaitForAfter("> :nod ls", "default>", 20*time.Second)
	want := "unknown command \"nod\" — did you mean \"node\"? (commands: "
	if !strings.Contains(s, want) || !strings.Contains(s, "see `:help`)") || strings.Contains(s, "`:-") || strings.Contains(s, "(usage: ") {
		t.Errorf(":nod ls: want %q and see `:help`, and no usage:\n%s", want, s)
	}
	term.Line(":node ad")
	s = term.WaitForAfter("> :node ad", "default>", 20*time.Second)
	if !strings.Contains(s, "unknown command \"ad\" for `:node` — did you mean \"add\"?") || !strings.Contains(s, "see `:node --help`)") {
		t.Errorf(":node ad:\n%s", s)
	}
}
