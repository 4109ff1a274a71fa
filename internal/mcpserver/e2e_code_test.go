//go:build unix

package mcpserver_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// scriptAnswer is run_script's answer as the Inspector prints it.
type scriptAnswer struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool `json:"isError"`
	StructuredContent struct {
		Result any    `json:"result"`
		Calls  int    `json:"calls"`
		Run    string `json:"run"`
		Error  *struct {
			Message string `json:"message"`
			Line    int    `json:"line"`
			Limit   string `json:"limit"`
		} `json:"error"`
	} `json:"structuredContent"`
}

func runScriptInspector(t *testing.T, target []string, script string) scriptAnswer {
	t.Helper()
	out := inspector(t, append(slices.Clone(target), "--method", "tools/call", "--tool-name", "run_script", "--tool-arg", "script="+script)...)
	var a scriptAnswer
	if err := json.Unmarshal([]byte(jsonPart(out)), &a); err != nil {
		t.Fatalf("run_script's answer: %v\n%s", err, out)
	}
	return a
}

// TestInspectorCode: the MCP Inspector CLI calls run_script through
// `nerve mcp serve --code` (and ?code=1 on the HTTP endpoint) with real
// servers behind nerve: a script reads a file with the filesystem server
// and echoes it, in one request. A script that loops forever, one that
// builds a huge list, one that calls a tool its client may not see and
// one that tries load() are each stopped with their own error, and the
// daemon and every node are unharmed: the next script works (issue 30).
func TestInspectorCode(t *testing.T) {
	h := newNerveHome(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello from a"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(t, append([]string{"node", "add", "mcp", "fs", "--"}, npmfix.ServerFilesystem(t, dir)...)...)
	h.run(t, "node", "add", "bash", "sh")

	lines := strings.Fields(h.run(t, "mcp", "url", "--code", "--tools", "echo.*,fs.*"))
	if len(lines) != 2 || !strings.Contains(lines[0], "code=1") {
		t.Fatalf("nerve mcp url --code printed %q", lines)
	}
	stdio := []string{h.bin, "mcp", "serve", "-e", "NERVE_HOME=" + h.home, "--code", "--tools", "echo.*,fs.*"}
	http := []string{lines[0], "--transport", "http", "--header", "Authorization: Bearer " + lines[1]}
	for _, target := range [][]string{stdio, http} {
		if got := inspectorTools(t, target); !slices.Equal(got, []string{"run_script"}) {
			t.Errorf("tools/list with --code = %v, want run_script alone", got)
		}
	}
	script := `t = fs.read_text_file(path="` + filepath.Join(dir, "a.txt") + `")["content"]
result = echo.identity(text=t.upper())`
	for _, target := range [][]string{stdio, http} {
		a := runScriptInspector(t, target, script)
		if a.IsError || a.StructuredContent.Result != "HELLO FROM A" || a.StructuredContent.Calls != 2 {
			t.Errorf("run_script: %+v", a)
		}
	}

	states := func() map[string]string { return h.nodeStates(t) }
	before := states()
	for _, tc := range []struct {
		name, script, limit, says string
	}{
		{"loop", "n = 0\nwhile True:\n    n += 1", "steps", "more than 10000000 steps"},
		{"huge list", "x = [0] * 1000000000", "bytes", "limit bytes=64 MB"},
		{"hidden tool", `sh.bash(command="touch ` + filepath.Join(dir, "pwned") + `")`, "", "no builtin and no node visible to this script is called sh"},
		{"hidden by name", `tool("sh.bash", command="touch ` + filepath.Join(dir, "pwned") + `")`, "", `tool "sh.bash" is not visible to this script`},
		{"load", `load("x.star", "y")`, "", "load"},
	} {
		a := runScriptInspector(t, stdio, tc.script)
		e := a.StructuredContent.Error
		if !a.IsError || e == nil || e.Limit != tc.limit || !strings.Contains(e.Message, tc.says) || e.Line == 0 {
			t.Errorf("%s: want an error saying %q (limit %q) at a line; got %+v", tc.name, tc.says, tc.limit, a)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a script ran the hidden sh.bash")
	}
	if after := states(); !maps.Equal(before, after) {
		t.Errorf("node states changed: %v → %v", before, after)
	}
	if a := runScriptInspector(t, http, script); a.IsError || a.StructuredContent.Result != "HELLO FROM A" {
		t.Errorf("run_script after the stopped scripts: %+v", a)
	}
	// The call log shows the script's calls under its run, by the client.
	out := h.run(t, "log", "-n", "2")
	if !strings.Contains(out, "script:mcp:") {
		t.Errorf("nerve log does not show the script's calls as script:mcp:CLIENT:\n%s", out)
	}
}
