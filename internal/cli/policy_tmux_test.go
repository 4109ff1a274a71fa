//go:build unix

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestTmuxCommanderApprovesCall: a call the session's policy asks about,
// from an MCP client that cannot show a form, is put to the person at the
// Commander — idle at its prompt — with the exact arguments; "a" runs it,
// "d" refuses it and the client is told so; the call log says who
// decided. The real binary in a terminal, through its daemon.
func TestTmuxCommanderApprovesCall(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "ev", "--", server)
	n.Must("session", "set", "policy", "ev.echo=ask")
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "script"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(text string) <-chan *mcp.CallToolResult {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev.echo", Arguments: map[string]any{"text": text}})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			done <- res
		}()
		return done
	}

	res := call("from the agent")
	s := term.WaitFor("approve>", 30*time.Second)
	if !strings.Contains(s, "? mcp:script wants to call @ev echo") || !strings.Contains(s, `"text": "from the agent"`) ||
		!strings.Contains(s, "[a]llow once  allow for 10 [m]inutes") {
		t.Errorf("the approval on screen:\n%s", s)
	}
	term.Line("a")
	term.WaitForAfter("approve> a", "allowed once", 20*time.Second)
	if r := <-res; r.IsError || resultText(r) != "from the agent" {
		t.Errorf("approved at the Commander: %q (isError %v)", resultText(r), r.IsError)
	}

	res = call("second")
	term.WaitForCount("approve>", 2, 30*time.Second)
	term.Line("d")
	term.WaitForAfter("approve> d", "denied", 20*time.Second)
	if r := <-res; !r.IsError || !strings.Contains(resultText(r), "(at repl) refused it: declined") {
		t.Errorf("denied at the Commander: %q (isError %v)", resultText(r), r.IsError)
	}
	if out := n.Must("log", "-n", "2"); !strings.Contains(out, "policy approved by repl (ev.echo=ask)") || !strings.Contains(out, "policy denied by repl (ev.echo=ask)") {
		t.Errorf("nerve log:\n%s", out)
	}
}
