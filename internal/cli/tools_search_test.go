package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/api"
)

// `nerve tools --search` ranks with the session's index: the right tool
// first, the nearest (and a word on stderr) when none matches.
func TestToolsSearch(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	ctx := context.Background()
	for _, st := range []struct {
		argv           []string
		code           int
		stdout, stderr string
	}{
		{argv: []string{"node", "add", "identity", "echo"}, stdout: "READY"},
		{argv: []string{"tools", "--search", "return", "the", "text", "unchanged"}, stdout: "echo.identity  Returns the text"},
		{argv: []string{"tools", "--search", "zxqv"}, stdout: "echo.identity", stderr: `no tool matches "zxqv"; the nearest of`},
		{argv: []string{"tools", "--search"}, code: ExitUsage, stderr: "needs words"},
		{argv: []string{"tools", "--search", "echo", "--limit", "0"}, code: ExitUsage, stderr: "--limit"},
		{argv: []string{"tools", "--limit", "3"}, code: ExitUsage, stderr: "--limit goes with --search"},
	} {
		out.Reset()
		errb.Reset()
		code := ExitCode(errb, Exec(ctx, env, st.argv))
		name := strings.Join(st.argv, " ")
		if code != st.code || !strings.Contains(out.String(), st.stdout) || !strings.Contains(errb.String(), st.stderr) {
			t.Errorf("nerve %s: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", name, code, out, errb, st.code, st.stdout, st.stderr)
		}
	}
	out.Reset()
	env.JSON = true
	if code := ExitCode(errb, Exec(ctx, env, []string{"tools", "--search", "echo", "text"})); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errb)
	}
	var res api.ToolSearch
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Tools) != 1 || res.Tools[0].Qualified != "echo.identity" || res.Of < 1 || res.Nearest {
		t.Errorf("--json: %s (%v), want echo.identity, matched", out, err)
	}
}
