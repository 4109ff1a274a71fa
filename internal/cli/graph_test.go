package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/fixtures/llmserver"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGraphThroughSession runs a graph over server-filesystem, bash,
// identity and a flaky MCP server: fan-out and fan-in, a foreach, a when,
// a retry that succeeds on the second attempt, a timeout that is skipped
// with a default; then a graph calling that graph, and the refusals a
// person meets at add time.
func TestGraphThroughSession(t *testing.T) {
	work := t.TempDir()
	fsArgv := npmfix.ServerFilesystem(t, work)
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	env, out, errb := embeddedEnv(t)
	gdir := t.TempDir()
	pipeline := writeFile(t, filepath.Join(gdir, "pipeline.yaml"), `
description: writes three files, reads them back, counts them
inputs:
  dir: {type: string, description: folder to work in}
  names: {type: array, description: files to read back}
steps:
  write: {call: sh.bash, args: {command: "for n in a b c; do echo line-$n > ${inputs.dir}/$n.txt; done"}}
  count: {call: sh.bash, args: {command: "ls ${inputs.dir} | wc -l"}, after: write}
  each:  {call: fs.read_text_file, foreach: "${inputs.names}", args: {path: "${inputs.dir}/${item}"}, after: write}
  flaky: {call: flaky.echo, args: {text: steady}, retry: {attempts: 2}}
  slow:  {call: sh2.bash, args: {command: "sleep 30"}, timeout: 300ms, on_error: skip, default: no time}
  many:  {call: echo.identity, args: {text: many}, when: "${steps.count.text} > 2"}
  few:   {call: echo.identity, args: {text: few}, when: "${steps.count.text} <= 2"}
  join:  {call: echo.identity, args: {text: "${steps.each.text}|${steps.flaky.text}|${steps.slow.text}|${steps.many.text}${steps.few.text}"}}
output: "${steps.join.text}"
`)
	outer := writeFile(t, filepath.Join(gdir, "outer.json"), `{
  "inputs": {"dir": {"type": "string"}},
  "steps": {
    "inner": {"call": "pipeline.run", "args": {"dir": "${inputs.dir}", "names": ["c.txt"]}},
    "shout": {"call": "sh.bash", "args": {"command": "echo \"${steps.inner.text}\" | tr a-z A-Z"}}
  },
  "output": "${steps.shout.text}"
}`)
	cyclic := writeFile(t, filepath.Join(gdir, "cyclic.yaml"), "steps:\n  a: {call: echo.identity, args: {text: \"${steps.c.text}\"}}\n  b: {call: echo.identity, args: {text: \"${steps.a.text}\"}}\n  c: {call: echo.identity, args: {text: \"${steps.b.text}\"}}\n")
	typo := writeFile(t, filepath.Join(gdir, "typo.yaml"), "steps:\n  a: {call: echo.identiy, args: {text: x}}\n  b: {call: fs.read_text_file, args: {paht: /x}}\n")
	back := writeFile(t, filepath.Join(gdir, "back.yaml"), "steps:\n  a: {call: outer.run, args: {dir: /tmp}}\n")

	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}},
		{argv: []string{"node", "add", "bash", "sh"}},
		{argv: []string{"node", "add", "bash", "sh2"}},
		{argv: append([]string{"node", "add", "mcp", "fs", "--cwd", work, "--"}, fsArgv...)},
		{argv: []string{"node", "add", "mcp", "flaky", "--", bad, "--mode", "flaky-call"}},
		{argv: []string{"graph", "add", "pipeline", "--from", pipeline}, stderr: "graph pipeline added (8 steps)"},
		{argv: []string{"call", "@pipeline", "?"}, stdout: "dir"},
		{argv: []string{"call", "@pipeline", "dir=" + work, `names=["a.txt","b.txt"]`},
			stdout: "line-a\nline-b|steady|no time|many", stderr: "@pipeline ↻ flaky attempt 2 after: the tool reported an error: flaky: try again"},
		{argv: []string{"graph", "add", "outer", "--from", outer}},
		{argv: []string{"call", "@outer", "dir=" + work}, stdout: "LINE-C|STEADY|NO TIME|MANY"},
		{argv: []string{"graph", "add", "cyc", "--from", cyclic}, code: ExitUsage, stderr: "cyclic.yaml:2:3: the steps form a cycle: a → b → c → a"},
		{argv: []string{"graph", "add", "ty", "--from", typo}, code: ExitUsage, stderr: "typo.yaml:2:13: step a calls echo.identiy: no such tool; did you mean echo.identity?"},
		{argv: []string{"graph", "add", "ty", "--from", typo}, code: ExitUsage, stderr: `typo.yaml:3:38: step b: arguments of fs.read_text_file: invalid arguments: missing required argument "path"`},
		{argv: []string{"graph", "edit", "pipeline", "--from", back}, code: ExitUsage, stderr: "step a calls graph outer, which calls back: pipeline → outer → pipeline"},
		{argv: []string{"graph", "ls"}, stdout: "pipeline"},
		{argv: []string{"graph", "export", "outer"}, stdout: `"inner": {"call": "pipeline.run"`},
		{argv: []string{"graph", "runs", "pipeline"}, stdout: "finished"},
		{argv: []string{"call", "@pipeline", "dir=" + work, `names=["nope.txt"]`}, code: ExitToolError, stderr: "graph pipeline failed at step each: item 0 (nope.txt)"},
		{argv: []string{"graph", "rm", "echo"}, code: ExitFailed, stderr: `node "echo" is a identity node, not a graph`},
	})

	// The failed run is recorded with the failing step; show lists every step.
	out.Reset()
	if err := Exec(context.Background(), env, []string{"graph", "runs", "pipeline", "--json"}); err != nil {
		t.Fatal(err)
	}
	var runs []runSummary
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil || len(runs) != 3 {
		t.Fatalf("runs: %v %s", err, out)
	}
	if runs[0].State != "failed" || runs[1].State != "finished" {
		t.Errorf("runs newest first: %s, %s", runs[0].State, runs[1].State)
	}
	runSteps(t, env, out, errb, []step{
		{argv: []string{"graph", "show", runs[1].ID}, stdout: "slow   skipped"},
		{argv: []string{"graph", "show", runs[0].ID}, stdout: "each   failed"},
		{argv: []string{"graph", "resume", runs[1].ID}, code: ExitFailed, stderr: "finished; there is nothing to resume"},
	})
}

// TestGraphWithClaudeStepCalledByLLM: an llm node calls a graph whose step
// asks a Claude node (fixtures/fakeclaude); the model gets the graph's
// output as the tool result.
func TestGraphWithClaudeStepCalledByLLM(t *testing.T) {
	fakeClaude := testutil.BuildBinary(t, "./fixtures/fakeclaude")
	s := llmserver.Start(
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{{ID: "c1", Name: "up__run", Arguments: `{"text":"hi"}`}}},
		llmserver.Turn{Text: "the graph answered"},
	)
	t.Cleanup(s.Close)
	env, out, errb := embeddedEnv(t)
	def := writeFile(t, filepath.Join(t.TempDir(), "up.yaml"), `
inputs: {text: {type: string, description: what to tell Claude}}
steps:
  ask:  {call: cl.ask_claude, args: {message: "${inputs.text}"}}
  wrap: {call: echo.identity, args: {text: "claude: ${steps.ask.text}"}}
`)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}},
		{argv: []string{"node", "add", "claude", "cl", "--env", "FAKECLAUDE_HOME=" + t.TempDir(), "--", fakeClaude}, stdout: "READY"},
		{argv: []string{"graph", "add", "up", "--from", def}},
		{argv: []string{"call", "@up", "text=hello"}, stdout: "claude: You said: hello"},
		{argv: []string{"node", "add", "llm", "ag", "--base-url", s.URL, "--model", "m", "--tools", "up", "--stream=false"}, stdout: "READY with 1 tool"},
		{argv: []string{"call", "@ag", "use the graph"}, stdout: "the graph answered"},
	})
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if res, ok := reqs[1].ToolResult("c1"); !ok || !strings.Contains(res, "claude: You said: hi") {
		t.Errorf("tool result the model saw: %q (found %v)", res, ok)
	}
}

// TestGraphStepBuilder builds a graph step by step, as at the REPL.
func TestGraphStepBuilder(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}},
		{argv: []string{"graph", "step", "b1", "one", "@echo", "identity", "text=${inputs.word}"}, stderr: "graph b1: step one calls echo.identity (1 steps)"},
		{argv: []string{"graph", "step", "b1", "two", "@echo", "identity", "text=${steps.one.text}!"}, stderr: "(2 steps)"},
		{argv: []string{"call", "@b1", "word=hey"}, stdout: "hey!"},
		{argv: []string{"graph", "step", "b1", "three", "@echo", "identity", "text=${steps.on.text}"}, code: ExitUsage, stderr: `graph b1: ${steps.on.text}: no step "on"; did you mean "one"?`},
		{argv: []string{"graph", "step", "b1", "three", "@ecko", "identity", "text=x"}, code: ExitUsage, stderr: "ecko"},
		{argv: []string{"graph", "export", "b1"}, stdout: "inputs:\n  word: {type: string}\nsteps:\n  one: {call: echo.identity, args: {text: '${inputs.word}'}}\n"},
		{argv: []string{"call", "@b1", "word=again"}, stdout: "again!"},
		// Values with spaces, as the shell (or the REPL's :graph step) hands them over (issue 17, item 6).
		{argv: []string{"graph", "step", "b2", "one", "@echo", "identity", "text=a b"}, stderr: "(1 steps)"},
		{argv: []string{"graph", "step", "b2", "two", "@echo", "identity", "text=Review: ${steps.one.text}"}, stderr: "(2 steps)"},
		{argv: []string{"call", "@b2", "run"}, stdout: "Review: a b"},
		// A picture of the graph (issue 17, item 11).
		{argv: []string{"graph", "show", "b2"}, stdout: "graph b2: 2 steps\n── one  echo.identity\n   ── two  echo.identity  ← one\n"},
		{argv: []string{"graph", "show", "b2", "--format", "mermaid"}, stdout: "flowchart LR\n  one[\"one<br/>echo.identity\"]\n  two[\"two<br/>echo.identity\"]\n  one --> two\n"},
		{argv: []string{"graph", "show", "b2", "--format", "dot"}, stdout: "  \"one\" -> \"two\";\n"},
		{argv: []string{"graph", "show", "b2", "--format", "png"}, code: ExitUsage, stderr: "--format is text, dot or mermaid"},
	})
}

// TestGraphAddReportsEveryMistake: a file's mistakes of every kind (a
// field, a reference, a call, a syntax error) come in one report, each at
// FILE:LINE:COLUMN (issue 17, item 7).
func TestGraphAddReportsEveryMistake(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	dir := t.TempDir()
	many := writeFile(t, filepath.Join(dir, "many.yaml"), "inputs: {file: string}\nsteps:\n  a: {call: echo.identiy, args: {text: x}}\n  b: {call: echo.identity, argz: {}}\n  c: {call: echo.identity, args: {text: \"${inputs.fiel}\"}}\n")
	syntax := writeFile(t, filepath.Join(dir, "syntax.yaml"), "steps:\n  a: {call: echo.identity,\n     args: {text: x}\n")
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}},
		{argv: []string{"graph", "add", "many", "--from", many}, code: ExitUsage,
			stderr: many + ":3:13: step a calls echo.identiy: no such tool; did you mean echo.identity?\n  " +
				many + ":4:13: step b: arguments of echo.identity: invalid arguments: missing required argument \"text\"",
			stdout: ""},
		{argv: []string{"graph", "add", "many", "--from", many}, code: ExitUsage,
			stderr: many + ":4:28: unknown field \"argz\" in step b; did you mean \"args\"?\n  " +
				many + ":5:41: ${inputs.fiel}: no input \"fiel\"; did you mean \"file\"?"},
		{argv: []string{"graph", "add", "syntax", "--from", syntax}, code: ExitUsage, stderr: syntax + ":2:6: reading the graph: the { opened here is never closed"},
	})
}

// TestGraphNodeInError: a graph that uses a node in ERROR can be added
// (with a warning naming the node's state), and its step fails naming the
// node's state and the fix, not "unknown tool" (issue 17, item 8).
func TestGraphNodeInError(t *testing.T) {
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	env, out, errb := embeddedEnv(t)
	def := writeFile(t, filepath.Join(t.TempDir(), "g.yaml"), "steps:\n  a: {call: broken.echo, args: {text: x}}\n")
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "mcp", "broken", "--", bad, "--mode", "crash-start"}, code: 1},
		{argv: []string{"graph", "add", "g", "--from", def}, stderr: `step a calls broken.echo, not checked: node "broken" is ERROR`},
		{argv: []string{"call", "@g", "run"}, code: 3, stderr: "graph g failed at step a: node \"broken\" is ERROR (the server exited with code 7"},
		{argv: []string{"call", "@g", "run"}, code: 3, stderr: "restart it with `nerve node restart broken`"},
	})
}

// TestGraphAddShellWarnings: `graph add` warns at a step that lets its
// values reach a shell as code (unsafe_shell), and refuses, at the file's
// LINE:COLUMN, a reference handed to a second interpreter (issue 26).
func TestGraphAddShellWarnings(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	dir := t.TempDir()
	unsafe := writeFile(t, filepath.Join(dir, "unsafe.yaml"), "inputs: {cmd: string}\nsteps:\n  s: {call: sh.bash, args: {command: \"eval ${inputs.cmd}\"}, unsafe_shell: true}\n")
	second := writeFile(t, filepath.Join(dir, "second.yaml"), "inputs: {x: string}\nsteps:\n  s: {call: sh.bash, args: {command: \"bash -c 'echo '${inputs.x}\"}}\n")
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "bash", "sh"}},
		{argv: []string{"graph", "add", "unsafe", "--from", unsafe}, stderr: "warning: " + unsafe + ":3:3: step s: unsafe_shell: nerve does not refuse its values where they can run as code in sh.bash"},
		{argv: []string{"graph", "add", "second", "--from", second}, code: ExitUsage, stderr: second + ":3:54: step s: ${inputs.x} in the command of sh.bash: it is an argument of bash, a shell"},
	})
}
