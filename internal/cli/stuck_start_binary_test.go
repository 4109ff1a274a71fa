//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryStuckStartHoldsUpNothing: a server stuck in its start (badmcp
// --mode hang, a 20 s start timeout) beside a bash node holds up
// nothing else — a one-step graph on the bash node, `nerve tools`, an llm
// node's call that runs a bash command — neither while it is being added
// nor after a daemon restart brings it back STARTING. Each answers while
// the stuck start is still in progress: before (issue 27) each waited for
// the stuck node to fail its start (the graph 19 s, `nerve tools` and the
// llm call 11 s), and after a restart every graph waited out the start
// timeout.
func TestBinaryStuckStartHoldsUpNothing(t *testing.T) {
	n := newRealNerve(t)
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	var turns []llmserver.Turn
	for range 2 { // one conversation per phase
		turns = append(turns,
			llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "sh__bash", Arguments: `{"command":"echo from-llm"}`}}},
			llmserver.Turn{Text: "the shell said from-llm"})
	}
	llm := llmserver.Start(turns...)
	t.Cleanup(llm.Close)
	t.Setenv("NERVE_TEST_KEY", "k-123")

	n.Must("node", "add", "bash", "sh")
	def := filepath.Join(n.home, "one.yaml")
	os.WriteFile(def, []byte("steps:\n  say: {call: sh.bash, args: {command: echo hello}}\n"), 0o600)
	n.Must("graph", "add", "one", "--from", def)
	n.Must("node", "add", "llm", "ai", "--base-url", llm.URL, "--model", "m", "--api-key", "${NERVE_TEST_KEY}", "--tools", "sh")

	starting := regexp.MustCompile(`(?m)^stuck\s+mcp\s+STARTING`)
	waitStarting := func() {
		testutil.WaitFor(t, 30*time.Second, func() bool { return starting.MatchString(n.Must("node", "ls")) }, "stuck to be STARTING")
	}
	others := func(phase string) {
		t.Helper()
		if out := n.Must("call", "@one", "run"); out != "hello\n" {
			t.Errorf("%s: the one-step graph: %q", phase, out)
		}
		if out := n.Must("tools"); !strings.Contains(out, "sh.bash") || !strings.Contains(out, "one.run") {
			t.Errorf("%s: nerve tools:\n%s", phase, out)
		}
		if out := n.Must("call", "@ai", "run echo"); !strings.Contains(out, "the shell said from-llm") {
			t.Errorf("%s: the llm call: %q", phase, out)
		}
		// All of them answered while the stuck start went on.
		if ls := n.Must("node", "ls"); !starting.MatchString(ls) {
			t.Errorf("%s: stuck is no longer STARTING: the requests above may have waited for it:\n%s", phase, ls)
		}
	}

	add := n.Command("node", "add", "mcp", "stuck", "--start-timeout", "20s", "--", bad, "--mode", "hang")
	if err := add.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { add.Process.Kill(); add.Wait() })
	waitStarting()
	others("while stuck is being added")

	// The restarted daemon starts stuck again (it has no catalogue, so it
	// starts eagerly) and it hangs again.
	n.Must("daemon", "stop")
	add.Wait()
	n.Must("node", "ls")
	waitStarting()
	others("after a daemon restart")
	n.Must("node", "rm", "stuck")
}
