package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/pkg/node"
)

func TestParse(t *testing.T) {
	tests := []struct {
		argv    []string
		path    string
		args    string
		rest    string
		flags   map[string]string
		wantErr string
	}{
		{argv: nil, path: ""},
		{argv: []string{"node", "ls"}, path: "node ls"},
		{argv: []string{"-s", "work", "node", "ls", "--json"}, path: "node ls", flags: map[string]string{"session": "work", "json": "true"}},
		{argv: []string{"node", "ls", "-swork"}, path: "node ls", flags: map[string]string{"session": "work"}},
		{argv: []string{"node", "add", "mcp", "fs", "--env", "A=1", "--env=B=2", "--", "npx", "-y", "pkg"}, path: "node add",
			args: "mcp fs npx -y pkg", rest: "npx -y pkg", flags: map[string]string{"env": "B=2"}},
		{argv: []string{"call", "@bash", "ls", "-la", "--json"}, path: "call", args: "@bash ls -la --json"},
		{argv: []string{"--json", "call", "@fs", "?"}, path: "call", args: "@fs ?", flags: map[string]string{"json": "true"}},
		{argv: []string{"node", "lss"}, wantErr: `did you mean "ls"`},
		{argv: []string{"frob"}, wantErr: `unknown command "frob"`},
		{argv: []string{"node", "ls", "--bogus"}, wantErr: "unknown flag --bogus"},
		{argv: []string{"node", "add", "--cwd"}, wantErr: "needs a value"},
		{argv: []string{"node", "ls", "--json=yes"}, wantErr: "takes no value"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			inv, err := Parse(Tree(), tt.argv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v; want %q", err, tt.wantErr)
				}
				if Code(err) != ExitUsage {
					t.Errorf("exit code %d; want %d", Code(err), ExitUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(inv.Path, " "); got != tt.path {
				t.Errorf("path %q; want %q", got, tt.path)
			}
			if got := strings.Join(inv.Args, " "); got != tt.args {
				t.Errorf("args %q; want %q", got, tt.args)
			}
			if got := strings.Join(inv.Rest, " "); got != tt.rest {
				t.Errorf("rest %q; want %q", got, tt.rest)
			}
			for k, v := range tt.flags {
				if inv.Flag(k) != v {
					t.Errorf("flag %s = %q; want %q", k, inv.Flag(k), v)
				}
			}
		})
	}
}

// embeddedEnv returns an Env on an in-process daemon writing to buffers.
func embeddedEnv(t *testing.T) (*Env, *bytes.Buffer, *bytes.Buffer) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Embedded: true, Paths: paths.Under(dir, dir+"/run"), Getenv: func(string) string { return "" }}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env, &out, &errb
}

func TestCommands(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	ctx := context.Background()
	steps := []struct {
		argv    []string
		code    int
		stdout  string // substring of stdout
		stderr  string // substring of stderr
		exactly bool   // stdout must equal
	}{
		{argv: []string{"node", "add", "identity", "echo"}, stdout: "identity echo is READY with 1 tool"},
		{argv: []string{"node", "add", "identity", "echo"}, code: ExitUsage, stderr: "already exists"},
		{argv: []string{"node", "add", "identity"}, code: ExitUsage, stderr: "usage: nerve node add KIND NAME"},
		{argv: []string{"node", "add", "nokind", "x"}, code: ExitUsage, stderr: "unknown node kind"},
		{argv: []string{"node", "ls"}, stdout: "echo  identity  READY"},
		{argv: []string{"call", "@echo", "hello", "world"}, stdout: "hello world\n", exactly: true},
		{argv: []string{"call", "@echo", "identity", `{"text":"j"}`}, stdout: "j\n", exactly: true},
		{argv: []string{"call", "@echo.identity", "text=kv"}, stdout: "kv\n", exactly: true},
		{argv: []string{"call", "@echo", "identity", `{"text":5}`}, code: ExitUsage, stderr: "text"},
		{argv: []string{"call", "@ecko", "x"}, code: ExitUsage, stderr: `did you mean "echo"`},
		{argv: []string{"call", "@echo", "?"}, stdout: "Parameters:"},
		{argv: []string{"call", ":node", "ls"}, stdout: "echo"},
		{argv: []string{"call"}, code: ExitUsage, stderr: "needs a Commander line"},
		{argv: []string{"tools"}, stdout: "echo.identity"},
		{argv: []string{"tools", "echo"}, stdout: "echo.identity"},
		{argv: []string{"node", "info", "echo"}, stdout: "calls  3 (0 failed"},
		{argv: []string{"node", "restart", "echo"}, stdout: "echo is READY"},
		{argv: []string{"-s", "work", "node", "ls"}, code: ExitUsage, stderr: "no session \"work\""},
		{argv: []string{"-s", "work", "node", "add", "identity", "w"}, stdout: "READY"},
		{argv: []string{"session", "ls"}, stdout: "work"},
		{argv: []string{"session", "rm", "work"}, stdout: "removed session work"},
		{argv: []string{"node", "rm", "echo"}, stdout: "removed echo"},
		{argv: []string{"node", "rm", "echo"}, code: ExitUsage, stderr: "no node"},
		{argv: []string{"node"}, code: ExitUsage, stderr: "needs a subcommand"},
		{argv: []string{"node", "add", "--help"}, stdout: "nerve node add mcp fs -- npx"},
		{argv: []string{"help", "daemon"}, stdout: "start"},
		{argv: []string{"completion", "zsh"}, stdout: "compdef _nerve nerve"},
		{argv: []string{"completion", "tcsh"}, code: ExitUsage, stderr: "bash, zsh or fish"},
		{argv: []string{"version"}, stdout: "nerve "},
	}
	for _, st := range steps {
		out.Reset()
		errb.Reset()
		code := ExitCode(errb, Exec(ctx, env, st.argv))
		name := strings.Join(st.argv, " ")
		if code != st.code {
			t.Errorf("nerve %s: exit %d; want %d (stderr %q)", name, code, st.code, errb)
		}
		if st.exactly && out.String() != st.stdout {
			t.Errorf("nerve %s: stdout %q; want %q", name, out, st.stdout)
		} else if !strings.Contains(out.String(), st.stdout) {
			t.Errorf("nerve %s: stdout %q; want it to contain %q", name, out, st.stdout)
		}
		if !strings.Contains(errb.String(), st.stderr) {
			t.Errorf("nerve %s: stderr %q; want it to contain %q", name, errb, st.stderr)
		}
	}
}

func TestJSONOutput(t *testing.T) {
	env, out, _ := embeddedEnv(t)
	ctx := context.Background()
	if err := Exec(ctx, env, []string{"node", "add", "identity", "echo"}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Exec(ctx, env, []string{"node", "ls", "--json"}); err != nil {
		t.Fatal(err)
	}
	var infos []node.Info
	if err := json.Unmarshal(out.Bytes(), &infos); err != nil {
		t.Fatalf("node ls --json: %v\n%s", err, out)
	}
	found := false
	for _, i := range infos {
		found = found || (i.ID == "echo" && i.State == node.Ready)
	}
	if !found {
		t.Errorf("node ls --json has no READY echo: %s", out)
	}
	out.Reset()
	if err := Exec(ctx, env, []string{"--json", "call", "@echo", "hi"}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != "hi" {
		t.Errorf("call --json: %s (%v)", out, err)
	}
}

func TestCandidates(t *testing.T) {
	env, _, _ := embeddedEnv(t)
	ctx := context.Background()
	if err := Exec(ctx, env, []string{"node", "add", "identity", "echo"}); err != nil {
		t.Fatal(err)
	}
	// Completion asks a running daemon; here the REPL's client stands in.
	c, err := env.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Client = c
	tests := []struct {
		words []string
		cur   string
		want  string
	}{
		{nil, "", "call completion context daemon env graph help log mcp node plan prompt prompts read resources script secret session tool tools ui version"},
		{nil, "no", "node"},
		{[]string{"node"}, "", "add auth info interrupt kinds ls reset restart rm start stop sync"},
		{[]string{"node", "add"}, "--c", "--cwd --code --context-tokens"},
		{[]string{"node", "info"}, "", "bash echo"}, // embedded sessions start with @bash
		{[]string{"node", "add"}, "id", "identity"},
		{[]string{"call"}, "@e", "@echo"},
		{[]string{"call"}, "@", "@bash @echo"},
		{[]string{"completion"}, "", "bash fish zsh"},
		{[]string{"-s"}, "", ""},
	}
	for _, tt := range tests {
		got := strings.Join(Candidates(ctx, env, tt.words, tt.cur), " ")
		if got != tt.want {
			t.Errorf("complete %v %q = %q; want %q", tt.words, tt.cur, got, tt.want)
		}
	}
}
