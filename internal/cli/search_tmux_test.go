//go:build unix

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestTmuxCommanderSearch: `@? WORDS` at the Commander shows the session's
// tools that do what the words say, ranked as search_tools ranks them,
// each as the line that calls it (issue 28, item 3).
func TestTmuxCommanderSearch(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)
	term.Line("@? give the text back unchanged")
	s := term.WaitForAfter("@? give the text back unchanged", "shows a tool's parameters", 20*time.Second)
	if !strings.Contains(s, "@echo identity  Returns the text it is given, unchanged.") {
		t.Errorf("@? did not show echo's tool:\n%s", s)
	}
	term.Line("@? zxqv")
	s = term.WaitForAfter("@? zxqv", "shows a tool's parameters", 20*time.Second)
	if !strings.Contains(s, `no tool matches "zxqv"; the nearest of`) || !strings.Contains(s, "@echo identity") {
		t.Errorf("@? zxqv did not show the nearest, said so:\n%s", s)
	}
}
