package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// inspectorTry runs the MCP Inspector CLI and returns its output and
// error, for calls that are meant to fail.
func inspectorTry(t *testing.T, args ...string) (string, error) {
	t.Helper()
	argv := append(npmfix.Inspector(t), args...)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func inspectorTools(t *testing.T, target []string) []string {
	t.Helper()
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	out := inspector(t, append(target, "--method", "tools/list")...)
	if err := json.Unmarshal([]byte(jsonPart(out)), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestInspectorExpose: the session's expose setting and each client's
// --tools (stdio) or ?tools= (HTTP), seen through the MCP Inspector CLI —
// a hidden tool is neither listed nor callable, a client narrows the
// session's filter and cannot widen it (issue 18, item 3).
func TestInspectorExpose(t *testing.T) {
	h := newNerveHome(t)
	h.run(t, "node", "add", "bash", "sh")
	h.run(t, "session", "set", "expose", "echo.*,sh.*")
	if out := h.run(t, "session", "show"); !strings.Contains(out, "echo.*,sh.*") {
		t.Errorf("session show: %s", out)
	}
	base, token := h.url(t)
	stdioTarget := func(flags ...string) []string {
		return append([]string{h.bin, "mcp", "serve", "-e", "NERVE_HOME=" + h.home}, flags...)
	}
	httpTarget := func(tools string) []string {
		u := base
		if tools != "" {
			u += "?tools=" + url.QueryEscape(tools)
		}
		return []string{u, "--transport", "http", "--header", "Authorization: Bearer " + token}
	}
	for _, tc := range []struct {
		name   string
		target []string
		want   []string
		call   string
		hidden string
	}{
		{"stdio, session default", stdioTarget(), []string{"echo.identity", "sh.bash"}, "sh.bash", ""},
		{"stdio --tools", stdioTarget("--tools", "echo.*"), []string{"echo.identity"}, "echo.identity", "sh.bash"},
		{"http ?tools", httpTarget("!echo.*"), []string{"sh.bash"}, "sh.bash", "echo.identity"},
		{"http cannot widen", httpTarget("bash.*,sh.*"), []string{"sh.bash"}, "sh.bash", "bash.bash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inspectorTools(t, tc.target); !slices.Equal(got, tc.want) {
				t.Errorf("tools/list = %v, want %v", got, tc.want)
			}
			arg := map[string]string{"sh.bash": "command=echo called", "echo.identity": "text=called"}
			out := inspector(t, append(tc.target, "--method", "tools/call", "--tool-name", tc.call, "--tool-arg", arg[tc.call])...)
			if !strings.Contains(out, "called") || strings.Contains(out, `"isError": true`) {
				t.Errorf("calling %s: %s", tc.call, out)
			}
			if tc.hidden == "" {
				return
			}
			out, err := inspectorTry(t, append(tc.target, "--method", "tools/call", "--tool-name", tc.hidden, "--tool-arg", "command=echo leaked", "--tool-arg", "text=leaked")...)
			if err == nil && !strings.Contains(out, "nknown tool") || strings.Contains(out, "leaked\n") {
				t.Errorf("calling hidden %s: err %v, output %s", tc.hidden, err, out)
			}
		})
	}
}
