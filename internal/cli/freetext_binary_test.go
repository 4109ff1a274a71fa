//go:build unix

package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
)

// TestBinaryMisspeltKeyAfterToolName: through `nerve call` (the real
// binary; the daemon parses the line), a misspelt key after a single-tool
// node's tool name exits 2 with did-you-mean and calls nothing.
func TestBinaryMisspeltKeyAfterToolName(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "id") // the first session has a bash node
	for _, tt := range misspeltAfterToolName {
		out, errs, code := n.Run(append([]string{"call"}, strings.Fields(tt.line)...)...)
		if code != ExitUsage || out != "" || !strings.Contains(errs, tt.want) {
			t.Errorf("nerve call %s: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout and %q", tt.line, code, out, errs, ExitUsage, tt.want)
		}
	}
	for _, id := range []string{"id", "bash"} {
		var d struct{ Info node.Info }
		if err := json.Unmarshal([]byte(n.Must("--json", "node", "info", id)), &d); err != nil {
			t.Fatal(err)
		}
		if d.Info.Calls != 0 {
			t.Errorf("@%s was called %d times by lines that should have been refused", id, d.Info.Calls)
		}
	}
}

// TestTmuxMisspeltKeyAfterToolName: the same lines in the Commander, in a
// terminal: the error is shown, no block is made, and the next good line
// is block 1.
func TestTmuxMisspeltKeyAfterToolName(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "id") // the first session has a bash node
	term := n.Commander()
	for _, tt := range misspeltAfterToolName {
		term.Line(tt.line)
		term.WaitForAfter("> "+tt.line, tt.want, 20*time.Second)
	}
	term.Line("@id identity text=ok")
	s := term.WaitForAfter("@id identity text=ok", "default>", 20*time.Second)
	if !strings.Contains(s, "[1] @id identity") {
		t.Errorf("a refused line made a block, or the good line did not run:\n%s", s)
	}
}
