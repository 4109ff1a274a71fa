//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestTmuxCommanderURLElicitation: a server's URL-mode elicitation (MCP
// 2025-11-25) shows the page's host and URL at the Commander, which opens
// it with $BROWSER only when the person says [o], then waits for [d]one;
// the server is told accept. [c]ancel tells it cancel, and a graph's
// ask: step with url: asks the same way (issue 27). The real binary, in a
// terminal, through its daemon; $BROWSER is a script that notes the URL.
func TestTmuxCommanderURLElicitation(t *testing.T) {
	n := newRealNerve(t)
	opened := filepath.Join(n.home, "opened")
	browser := writeFile(t, filepath.Join(n.home, "browser"), "#!/bin/sh\necho \"$1\" >> "+opened+"\n")
	if err := os.Chmod(browser, 0o700); err != nil {
		t.Fatal(err)
	}
	n.Must("node", "add", "mcp", "fx", "--", testutil.BuildBinary(t, "./fixtures/mcpserver"))
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "gate", "--from", writeFile(t, filepath.Join(n.home, "gate.yaml"), `
inputs: {tag: string}
steps:
  approve: {ask: "Approve the deploy of ${inputs.tag}", url: "https://ci.example.com/approve/${inputs.tag}"}
  say: {call: echo.identity, args: {text: "deployed after ${steps.approve.text}"}}
`))
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm", "BROWSER=" + browser}, n.bin)
	term.WaitFor("default>", 30*time.Second)

	const page = "https://example.com/connect?account=ada"
	term.Line("@fx elicit_url url=" + page + " message='Connect your account'")
	s := term.WaitForAfter("@fx elicit_url", "[o]pen it in your browser", 30*time.Second)
	if !strings.Contains(s, "? @fx asks you to open a page on example.com:\n  Connect your account\n  "+page) {
		t.Errorf("the request is not on screen as asked:\n%s", s)
	}
	if _, err := os.Stat(opened); err == nil {
		t.Fatal("the page was opened before the person said so")
	}
	term.Line("o")
	term.WaitForAfter("elicit> o", "when you are finished there: [d]one  [c]ancel", 20*time.Second)
	if data, err := os.ReadFile(opened); err != nil || strings.TrimSpace(string(data)) != page {
		t.Errorf("$BROWSER was given %q (%v), want the page", data, err)
	}
	term.Line("d")
	s = term.WaitForAfter("elicit> d", "user chose accept", 20*time.Second)
	if !strings.Contains(s, "→ done; @fx is told so") {
		t.Errorf("the Commander did not say what it told the server:\n%s", s)
	}

	term.Line("@fx elicit_url url=" + page)
	term.WaitForAfter("@fx elicit_url url="+page+"\n", "[n]o, decline", 30*time.Second)
	term.Line("c")
	term.WaitForAfter("elicit> c", "user chose cancel", 20*time.Second)

	// A graph's gate with a page.
	term.Line("@gate tag=v1.2")
	s = term.WaitForAfter("@gate tag=v1.2", "[o]pen it in your browser", 30*time.Second)
	if !strings.Contains(s, "? @gate asks you to open a page on ci.example.com:\n  Approve the deploy of v1.2\n  https://ci.example.com/approve/v1.2") {
		t.Errorf("the gate's page is not on screen:\n%s", s)
	}
	term.Line("d")
	term.WaitForAfter("elicit> d", "deployed after accepted", 20*time.Second)
}
