package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

func TestResourcesAndPrompts(t *testing.T) {
	bin := testutil.BuildBinary(t, "./fixtures/mcpserver")
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "mcp", "fx", "--", bin}, stdout: "READY"},
		{argv: []string{"resources", "fx"}, stdout: "fixture://text/hello  hello  text/plain"},
		{argv: []string{"resources", "fx"}, stdout: "fixture://greeting/{name}  greeting  text/plain  A greeting for {name}."},
		{argv: []string{"read", "fx", "fixture://text/hello"}, stdout: "hello from the nerve fixture\n"},
		{argv: []string{"read", "fx", "fixture://greeting/ann"}, stdout: "hello, ann\n"},
		{argv: []string{"call", ":read", "fx", "fixture://greeting/bob"}, stdout: "hello, bob\n"},
		{argv: []string{"read", "fx"}, code: ExitUsage, stderr: "needs NODE and URI"},
		{argv: []string{"read", "fx", "fixture://nope"}, code: ExitFailed, stderr: "fixture://nope"},
		{argv: []string{"prompts", "fx"}, stdout: "greet  Greets someone, in an optional style.\n    name (required)  who to greet\n    style  e.g. formal or pirate\n"},
		{argv: []string{"prompt", "fx", "greet", "name=Ann", "style=pirate"}, stdout: "# a greeting\n\n[user]\nGreet Ann in a pirate style.\n"},
		{argv: []string{"prompt", "fx", "plain"}, stdout: "[user]\nSay something plain.\n"},
		{argv: []string{"prompt", "fx", "greet", "Ann"}, code: ExitUsage, stderr: `prompt argument "Ann": use KEY=VALUE`},
		{argv: []string{"prompt", "fx", "greet"}, code: ExitFailed, stderr: "needs the argument name"},
		{argv: []string{"resources", "bash"}, code: ExitUsage, stderr: "@bash has no resources: only mcp nodes do"},
		{argv: []string{"prompts", "bash"}, code: ExitUsage, stderr: "@bash has no prompts: only mcp nodes do"},
		{argv: []string{"read", "bash", "x://y"}, code: ExitUsage, stderr: "@bash has no resources"},
		{argv: []string{"prompt", "bash", "p"}, code: ExitUsage, stderr: "@bash has no prompts"},
		{argv: []string{"node", "reset", "bash"}, code: ExitUsage, stderr: "@bash has no conversation to reset"},
		{argv: []string{"node", "reset", "fx"}, code: ExitUsage, stderr: "@fx has no conversation to reset"},
		{argv: []string{"resources", "nosuch"}, code: ExitUsage, stderr: "nosuch"},
	})

	// A blob is saved under the state folder and its path printed.
	out.Reset()
	errb.Reset()
	if err := Exec(context.Background(), env, []string{"read", "fx", "fixture://blob/bytes"}); err != nil {
		t.Fatalf("read blob: %v (%s)", err, errb)
	}
	path := strings.TrimSpace(out.String())
	if !strings.HasPrefix(path, filepath.Join(env.Paths.State, "resources")+string(filepath.Separator)) {
		t.Errorf("blob saved to %q; want a file under %s/resources", path, env.Paths.State)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(data, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
		t.Errorf("saved blob %v (%v); want the bytes 0…15", data, err)
	}
	if !strings.Contains(errb.String(), "application/octet-stream, 16 bytes") {
		t.Errorf("stderr %q; want the blob's type and size", errb)
	}

	// --json answers are the MCP results.
	out.Reset()
	if err := Exec(context.Background(), env, []string{"resources", "fx", "--json"}); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Resources []struct{ URI string }
		Templates []struct{ URITemplate string }
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Resources) != 2 || len(r.Templates) != 1 {
		t.Errorf("resources --json: %v\n%s", err, out)
	}
}

func TestMCPImport(t *testing.T) {
	bin := testutil.BuildBinary(t, "./fixtures/mcpserver")
	dir := t.TempDir()
	conf := filepath.Join(dir, "servers.json")
	writeConf := func(s string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(strings.ReplaceAll(s, "BIN", bin)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Claude Desktop's format; two names that make one id; a server that
	// cannot start; an unknown key (a warning).
	writeConf(`{"mcpServers": {
		"Fixture": {"command": "BIN", "env": {"TOKEN": "${NERVE_IMPORT_TOKEN:-none}"}},
		"fixture": {"command": "BIN", "cwd": "sub"},
		"My Server!": {"command": "BIN", "colour": "red"},
		"broken": {"command": "/nonexistent/nerve-test-server"}
	}}`)
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	env, out, errb := embeddedEnv(t)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"mcp", "import", conf, "--dry-run"}, stdout: "Fixture     fixture     stdio", stderr: "dry run: nothing was added"},
		{argv: []string{"node", "ls"}, not: "fixture"},
		{argv: []string{"mcp", "import", conf}, code: ExitFailed, stdout: `added fixture (server "Fixture"): READY`, stderr: "nerve: broken failed:"},
		{argv: []string{"node", "ls"}, stdout: "fixture-2"},
		{argv: []string{"node", "ls"}, stdout: "my-server-"},
		{argv: []string{"call", "@my-server-", "echo", "text=yo"}, stdout: "yo"},
		// Run again: what is there is skipped, the broken one fails again.
		{argv: []string{"mcp", "import", conf}, code: ExitFailed, stdout: "skipped fixture-2", stderr: "broken failed"},
	})
	// The last import's output, checked whole.
	if !strings.Contains(errb.String(), `warning: `+conf+`:4:`) || !strings.Contains(errb.String(), "colour") {
		t.Errorf("stderr %q; want the parser's warning about \"colour\" with its place", errb)
	}
	if !strings.Contains(errb.String(), "1 of 4 servers") {
		t.Errorf("stderr %q; want the count of failures", errb)
	}

	// Specs are saved unexpanded; a server's relative cwd is the config's.
	d := nodeDetail(t, env, out, "fixture")
	if d.Spec.Env["TOKEN"] != "${NERVE_IMPORT_TOKEN:-none}" {
		t.Errorf("env saved as %v; want the reference kept", d.Spec.Env)
	}
	if d.Spec.Cwd != dir {
		t.Errorf("cwd %q; want the config's folder %q", d.Spec.Cwd, dir)
	}
	if d2 := nodeDetail(t, env, out, "fixture-2"); d2.Spec.Cwd != filepath.Join(dir, "sub") {
		t.Errorf("cwd %q; want %q", d2.Spec.Cwd, filepath.Join(dir, "sub"))
	}

	// A server written wrong is reported; the others are still imported.
	writeConf(`{"mcpServers": {
		"good": {"command": "BIN"},
		"nocmd": {"args": ["x"]},
		"badargs": {"command": "BIN", "args": "not-a-list"}
	}}`)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"mcp", "import", conf}, code: ExitFailed, stdout: "added good: READY", stderr: `not imported: ` + conf + `:3:`},
	})
	if !strings.Contains(errb.String(), `"nocmd" has "args" but no "command"`) || !strings.Contains(errb.String(), "badargs") || !strings.Contains(errb.String(), "2 of 3 servers") {
		t.Errorf("stderr %q; want both bad servers named and counted", errb)
	}
	runSteps(t, env, out, errb, []step{
		{argv: []string{"call", "@good", "echo", "text=still"}, stdout: "still"},
	})

	// The default file is ./.mcp.json; VS Code's format with an http server.
	hs, srv := newHeaderServer(t)
	t.Chdir(dir)
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"servers": {"Web.API": {"type": "http", "url": "`+srv.URL+`/mcp", "headers": {"X-Key": "${NERVE_IMPORT_KEY}"}}}}`), 0o600)
	t.Setenv("NERVE_IMPORT_KEY", "v1")
	runSteps(t, env, out, errb, []step{
		{argv: []string{"mcp", "import", "--json"}, stdout: `"node": "web-api"`},
		{argv: []string{"call", "@web-api", "ping"}, stdout: "pong"},
		{argv: []string{"mcp", "import", "missing.json"}, code: ExitUsage, stderr: "nothing was imported"},
	})
	if !hs.saw("X-Key", "v1") {
		t.Error("the imported http server never got its header")
	}
	if o := options(t, nodeDetail(t, env, out, "web-api")); o["headers"].(map[string]any)["X-Key"] != "${NERVE_IMPORT_KEY}" {
		t.Errorf("headers saved as %v; want the reference kept", o["headers"])
	}
}
