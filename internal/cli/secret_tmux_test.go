//go:build unix

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestTmuxSecretSetHidesValue: `nerve secret set NAME` in a terminal asks
// for the value without echoing it (issue 32, item 5).
func TestTmuxSecretSetHidesValue(t *testing.T) {
	n := newRealNerve(t)
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NERVE_TOKENS=file", "NO_COLOR=1", "TERM=xterm"},
		n.bin, "secret", "set", "TOKEN")
	term.WaitFor("value of secret TOKEN (not shown):", 30*time.Second)
	term.Line("typed-in-secret-42")
	s := term.WaitFor("stored secret TOKEN", 20*time.Second)
	if strings.Contains(s, "typed-in-secret-42") {
		t.Errorf("the value was echoed:\n%s", s)
	}
	if out := n.Must("secret", "ls"); out != "TOKEN\n" {
		t.Errorf("secret ls = %q", out)
	}
}
