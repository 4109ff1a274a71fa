//go:build linux

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestREPLGraphLiveView adds a graph at the prompt, asks for its inputs,
// runs it and watches the steps in the status line and above it; then
// cancels a run with Ctrl-C and checks no step call is left running.
func TestREPLGraphLiveView(t *testing.T) {
	home := t.TempDir()
	work := t.TempDir()
	def := filepath.Join(work, "g.yaml")
	os.WriteFile(def, []byte(`
description: waits for a file, then echoes
inputs: {dir: {type: string, description: folder to watch}}
steps:
  hello: {call: id.identity, args: {text: hello}}
  wait:  {call: sh.bash, args: {command: "while [ ! -e ${inputs.dir}/go ]; do sleep 0.05; done; echo went"}}
  join:  {call: id.identity, args: {text: "${steps.hello.text} ${steps.wait.text}"}}
output: "${steps.join.text}"
`), 0o600)
	term := repl(t, home, "--embedded")
	term.Line(":node add identity id")
	term.WaitFor("identity id is READY", 10*time.Second)
	term.Line(":node add bash sh")
	term.WaitFor("bash sh is READY", 10*time.Second)
	term.Line(":graph add g --from " + def)
	term.WaitFor("graph g added (3 steps)", 10*time.Second)

	term.Line("@g ?")
	s := term.WaitFor("Examples:", 20*time.Second)
	for _, want := range []string{"waits for a file, then echoes", "dir", "folder to watch"} {
		if !strings.Contains(s, want) {
			t.Errorf("`@g ?` lacks %q:\n%s", want, s)
		}
	}

	term.Line("@g dir=" + work)
	term.WaitFor("running: wait", 10*time.Second) // the live status line
	term.WaitFor("✓ hello", 20*time.Second)
	os.WriteFile(filepath.Join(work, "go"), nil, 0o600)
	s = term.WaitFor("[1] @g run", 10*time.Second)
	if !strings.Contains(s, "hello went") || !strings.Contains(s, "✓ join") {
		t.Errorf("the run's output or its last step is missing:\n%s", s)
	}
	os.Remove(filepath.Join(work, "go"))

	// Ctrl-C cancels the run and the bash call in it.
	term.Line("@g dir=" + work)
	term.WaitFor("running: wait", 10*time.Second)
	term.Keys("C-c")
	term.WaitFor("cancelled @g run", 20*time.Second)
	testutil.WaitFor(t, 10*time.Second, func() bool { return strings.HasSuffix(term.LastLine(), "default>") }, "the prompt after Ctrl-C")
	term.Line("@sh echo shell-is-free")
	term.WaitFor("shell-is-free\n", 10*time.Second)
	term.Line(":graph runs g")
	term.WaitFor("cancelled", 20*time.Second)
}
