package repl

import (
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/commander"
)

// TestStateNoticeOffersSignIn: a node that goes ERROR because its server
// wants a sign-in is offered `:node auth`, not a restart that would fail
// the same way.
func TestStateNoticeOffersSignIn(t *testing.T) {
	got := stateNotice(&commander.Style{}, "gh", "STARTING", "ERROR", "the server at https://h/mcp needs you to sign in (OAuth) before nerve may use it: run `nerve node auth gh` to authorize nerve in a browser")
	if !strings.Contains(got, "(sign in: `:node auth gh`)") {
		t.Errorf("notice %q does not offer `:node auth gh`", got)
	}
	if got := stateNotice(&commander.Style{}, "fs", "READY", "ERROR", "the server exited with code 1 unexpectedly"); !strings.Contains(got, "`:node restart fs`") {
		t.Errorf("notice %q does not offer a restart", got)
	}
}
