//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptBinary drives `nerve script` as a person does (issue 30):
// the answer on stdout, the error at FILE:LINE:COLUMN on stderr, the exit
// codes of `nerve call`, --tools hiding tools, and the daemon and its
// nodes unharmed by scripts that were stopped.
func TestScriptBinary(t *testing.T) {
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
	good := write("good.star", `out = sh.bash(command="echo from-bash")
print("bash said", out.strip())
result = {"echo": echo.identity(text="hi"), "parts": [p for p in out.split("-")]}
`)
	out, errs, code := n.Run("script", good)
	if code != 0 || !strings.Contains(out, "bash said from-bash\n") || !strings.Contains(out, `"echo": "hi"`) {
		t.Fatalf("script: exit %d\n%s\n%s", code, out, errs)
	}
	var answer struct {
		Result map[string]any `json:"result"`
		Calls  int            `json:"calls"`
		Run    string         `json:"run"`
	}
	if err := json.Unmarshal([]byte(n.Must("--json", "script", good)), &answer); err != nil || answer.Calls != 2 || answer.Result["echo"] != "hi" || answer.Run == "" {
		t.Fatalf("--json: %v %+v", err, answer)
	}
	if log := n.Must("log", "-n", "2"); strings.Count(log, "script:cli/") != 2 {
		t.Errorf("the call log does not show the script's calls:\n%s", log)
	}

	for _, tc := range []struct {
		name, src string
		args      []string
		code      int
		stderr    string
	}{
		{"runtime error", "x = 1\ny = x + 'a'\n", nil, 3, "bad.star:2:7: unknown binary op: int + string"},
		{"huge list", "x = [0] * 1000000000\n", nil, 3, "bad.star:1:9: script stopped: list * 1000000000 would bring the values built to 14.9 GB, more than the limit bytes=64 MB"},
		{"load", "load('x.star', 'y')\n", nil, 3, `bad.star:1:1: load("x.star") is not available in scripts`},
		{"hidden node", "sh.bash(command='id')\n", []string{"--tools", "echo.*"}, 3, "bad.star:1:1: undefined: sh: no builtin and no node visible to this script is called sh"},
		{"hidden tool", "tool('sh.bash', command='id')\n", []string{"--tools", "echo.*"}, 3, `tool "sh.bash" is not visible to this script`},
		{"bad filter", "x = 1\n", []string{"--tools", "!"}, 2, "excludes nothing"},
		{"check", "echo.identity(text='x')\nnope()\n", []string{"--check"}, 3, "bad.star:2:1: undefined: nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := n.Run(append(append([]string{"script"}, tc.args...), write("bad.star", tc.src))...)
			if code != tc.code || !strings.Contains(errs, tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s\nwant on stderr: %s", code, tc.code, out, errs, tc.stderr)
			}
		})
	}
	if out, _, code := n.Run("script", "--check", good); code != 0 || !strings.Contains(out, "compiles") {
		t.Errorf("--check of a good script: exit %d %s", code, out)
	}
	if _, errs, code := n.Run("script", filepath.Join(n.home, "missing.star")); code != 2 || !strings.Contains(errs, "reading the script") {
		t.Errorf("missing file: exit %d %s", code, errs)
	}
	n.Stdin = "result = echo.identity(text='from stdin')\n"
	if out := n.Must("script", "-"); out != "from stdin\n" {
		t.Errorf("stdin: %q", out)
	}
	n.Stdin = ""
	if list := n.Must("script", "--list", "--tools", "echo.*"); !strings.Contains(list, "echo.identity(text: str) -> str") || strings.Contains(list, "sh.bash") {
		t.Errorf("--list:\n%s", list)
	}
	// The daemon and every node are unharmed.
	if out := n.Must("call", "@echo", "identity", "text=after"); !strings.Contains(out, "after") {
		t.Errorf("a call after the scripts: %q", out)
	}
	if ls := n.Must("node", "ls"); strings.Count(ls, "READY") != 3 {
		t.Errorf("nodes after the scripts:\n%s", ls)
	}
}
