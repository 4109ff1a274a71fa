package graphlang

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

const scriptGraph = `inputs: {dir: string}
steps:
  list: {call: fs.list_directory, args: {path: "${inputs.dir}"}}
  count:
    script: |
      names = steps["list"]["text"].splitlines()
      result = {"dir": inputs["dir"], "n": len(names)}
    timeout: 30s
output: "${steps.count.structured}"
`

// TestScriptStep: a script step waits for the steps its script names
// (steps["list"]) and is placed in the graph's source.
func TestScriptStep(t *testing.T) {
	d, err := Parse([]byte(scriptGraph))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Step("count")
	if s.Script == "" || s.Call != "" || strings.Join(s.Deps, ",") != "list" {
		t.Fatalf("count: script %q, call %q, deps %v", s.Script, s.Call, s.Deps)
	}
	// Line 2, column 23 of the script is `inputs` on line 7 of the file.
	if got := s.ScriptPos(2, 23); got != (Pos{7, 29}) {
		t.Errorf("ScriptPos(2, 23) = %v, want 7:29", got)
	}
	one, err := Parse([]byte("steps:\n  a: {script: 'result = 1 +'}\n"))
	if err == nil || !strings.Contains(err.Error(), "2:28: step a: script: ") {
		t.Errorf("a one-line script's syntax error: %v (%v)", err, one)
	}
}

func TestScriptStepMistakes(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"syntax", "steps:\n  a:\n    script: |\n      x = 1\n      y = (\n", "6:7: step a: script: got end of file"},
		{"unknown step", "steps:\n  read: {call: e.identity, args: {text: x}}\n  b:\n    script: |\n      result = steps[\"raed\"]\n",
			`5:22: step b: script: steps["raed"]: no step "raed"; did you mean "read"?`},
		{"own result", "steps:\n  b:\n    script: |\n      result = steps[\"b\"]\n", "a step cannot use its own result"},
		{"steps read by a variable", "steps:\n  read: {call: e.identity, args: {text: x}}\n  b:\n    script: |\n      k = \"read\"\n      result = steps[k]\n",
			`6:16: step b: script: read steps with a step's name written out`},
		{"unknown input", "inputs: {file: string}\nsteps:\n  b: {script: 'result = inputs[\"fiel\"]'}\n", `no input "fiel"; did you mean "file"?`},
		{"item outside foreach", "steps:\n  b: {script: 'result = item'}\n", "item is only known in a step with `foreach:`"},
		{"script and call", "steps:\n  b: {script: 'result = 1', call: e.identity}\n", "more than one of `call:`, `ask:` and `script:`"},
		{"script with args", "steps:\n  b: {script: 'result = 1', args: {x: 1}}\n", "a `script:` step takes no args"},
		{"cycle through a script", "steps:\n  a: {call: e.identity, args: {text: \"${steps.b.text}\"}}\n  b: {script: 'result = steps[\"a\"]'}\n", "the steps form a cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestCheckScripts: Check compiles a script step against the session's
// tools and reports a name that is no node at its place in the file; a
// node whose tools cannot be listed now is taken as there.
func TestCheckScripts(t *testing.T) {
	tools := map[string]*mcp.Tool{
		"fs.list_directory": {Name: "list_directory", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
		"fs.write_file":     {Name: "write_file", InputSchema: map[string]any{"type": "object"}},
	}
	check := func(src string, down map[string]string) error {
		opts, _ := json.Marshal(Options{Source: src})
		_, err := Check(context.Background(), node.Spec{ID: "g", Kind: Kind, Options: opts}, &node.Catalogue{Tools: tools, Down: down})
		return err
	}
	if err := check(scriptGraph, nil); err != nil {
		t.Fatalf("a good graph: %v", err)
	}
	bad := "steps:\n  a:\n    script: |\n      fs.write_file(path=\"x\", content=\"y\")\n      result = gh.create_issue(title=\"t\")\n"
	err := check(bad, nil)
	if err == nil || !strings.Contains(err.Error(), "5:16: step a: script: undefined: gh") {
		t.Fatalf("a script calling no node: %v", err)
	}
	if err := check(bad, map[string]string{"gh": "not running"}); err != nil {
		t.Errorf("a script calling a node that is down: %v", err)
	}
	// A graph's script cannot call the graph itself.
	tools["g.run"] = &mcp.Tool{Name: "run", InputSchema: map[string]any{"type": "object"}}
	if err := check("steps:\n  a: {script: 'result = g.run()'}\n", nil); err == nil || !strings.Contains(err.Error(), "undefined: g") {
		t.Errorf("a script calling its own graph: %v", err)
	}
}
