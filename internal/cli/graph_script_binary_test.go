//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphScriptBinary: a graph with a script step, through the real
// binary — `nerve graph add` checks the script against the session's
// tools and names a mistake at FILE:LINE:COLUMN, `nerve call` runs it:
// the script reads the first step's result and the run's input as data,
// calls two tools, and its result is the graph's output (issue 30).
func TestGraphScriptBinary(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	n.Must("node", "add", "bash", "sh")
	write := func(name, src string) string {
		p := filepath.Join(n.home, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", `steps:
  count:
    script: |
      n = sh.bash(command="echo 3")
      result = fs.read_text_file(path="x")
`)
	if _, errs, code := n.Run("graph", "add", "g", "--from", bad); code != 2 || !strings.Contains(errs, "bad.yaml:5:16: step count: script: undefined: fs") {
		t.Fatalf("graph add with a script calling no node: exit %d\n%s", code, errs)
	}
	good := write("g.yaml", `inputs: {name: string}
steps:
  list: {call: sh.bash, args: {command: "printf 'a\nb\nc\n'"}}
  count:
    script: |
      names = steps["list"]["text"].splitlines()
      echoed = echo.identity(text=inputs["name"])
      n = sh.bash(command="echo %d" % len(names)).strip()
      result = {"name": echoed, "files": names, "n": int(n)}
output: "${steps.count.structured}"
`)
	n.Must("graph", "add", "g", "--from", good)
	if pic := n.Must("graph", "show", "g"); !strings.Contains(pic, "count  script  ← list") {
		t.Errorf("graph show:\n%s", pic)
	}
	// A value that looks like code is data to the script.
	word := `$(touch pwned)"; fail("x`
	args, _ := json.Marshal(map[string]string{"name": word})
	var got struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
		N     int      `json:"n"`
	}
	if err := json.Unmarshal([]byte(n.Must("call", "@g", string(args))), &got); err != nil || got.Name != word || strings.Join(got.Files, ",") != "a,b,c" || got.N != 3 {
		t.Errorf("nerve call @g: %v %+v", err, got)
	}
	if _, err := os.Stat(filepath.Join(n.home, "pwned")); err == nil {
		t.Error("an input ran as a command")
	}
	if log := n.Must("log", "-n", "3"); strings.Count(log, "script:graph:g/count/") != 2 {
		t.Errorf("the call log does not show the script's two calls under the step:\n%s", log)
	}
}
