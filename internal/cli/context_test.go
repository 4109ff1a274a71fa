package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/paths"
)

// contextEnv runs commands with a state folder of their own and the
// environment vars.
func contextEnv(t *testing.T, vars map[string]string) func(args ...string) (string, string, error) {
	dir := t.TempDir()
	return func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Paths: paths.Under(dir, filepath.Join(dir, "run")), Getenv: func(k string) string { return vars[k] }}
		err := Exec(context.Background(), env, args)
		return out.String(), errb.String(), err
	}
}

// TestContexts: contexts are made, chosen, listed and removed, kept in
// the state folder, and the daemon commands reach is -H, else NERVE_HOST,
// else the current context.
func TestContexts(t *testing.T) {
	vars := map[string]string{}
	run := contextEnv(t, vars)
	must := func(args ...string) string {
		t.Helper()
		out, errs, err := run(args...)
		if err != nil {
			t.Fatalf("nerve %s: %v (%s)", strings.Join(args, " "), err, errs)
		}
		return out
	}
	if out := must("context", "show"); out != "this machine (from context default)\n" {
		t.Errorf("context show with no contexts = %q", out)
	}
	must("context", "create", "build", "--host", "ssh://me@build.example.com:2222")
	must("context", "create", "gpu", "-H", "ssh://gpu") // -H is --host here too
	if out := must("context", "show"); !strings.Contains(out, "this machine") {
		t.Errorf("creating a context chose it: %q", out)
	}
	must("context", "use", "build")
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"context", "show"}, "", "ssh://me@build.example.com:2222 (from context build)\n"},
		{[]string{"context", "show"}, "ssh://other", "ssh://other (from NERVE_HOST)\n"},
		{[]string{"-H", "ssh://third", "context", "show"}, "ssh://other", "ssh://third (from -H)\n"},
	} {
		vars["NERVE_HOST"] = tc.env
		if out := must(tc.args...); out != tc.want {
			t.Errorf("nerve %s with NERVE_HOST=%q = %q, want %q", strings.Join(tc.args, " "), tc.env, out, tc.want)
		}
	}
	vars["NERVE_HOST"] = ""
	ls := must("context", "ls")
	for _, want := range []string{"default ", "(this machine)", "build *", "ssh://me@build.example.com:2222", "gpu ", "ssh://gpu"} {
		if !strings.Contains(ls, want) {
			t.Errorf("context ls lacks %q:\n%s", want, ls)
		}
	}
	must("context", "rm", "build")
	if out := must("context", "show"); out != "this machine (from context default)\n" {
		t.Errorf("removing the current context left %q", out)
	}
	if out := must("--json", "context", "ls"); !strings.Contains(out, `"name": "gpu"`) || strings.Contains(out, "build") {
		t.Errorf("context ls --json after rm:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"context", "create", "default", "--host", "ssh://x"}, "cannot be created"},
		{[]string{"context", "create", "gpu", "--host", "ssh://x"}, `context "gpu" exists`},
		{[]string{"context", "create", "x y", "--host", "ssh://x"}, "is not a context name"},
		{[]string{"context", "create", "box"}, "needs --host"},
		{[]string{"context", "create", "box", "--host", "box.example.com"}, "write ssh://box.example.com"},
		{[]string{"context", "use", "nope"}, `no context "nope" (contexts: default, gpu`},
		{[]string{"context", "rm", "default"}, "cannot be removed"},
		{[]string{"-H", "build", "node", "ls"}, `-H: "build" is not ssh://`},
		{[]string{"-H", "ssh://build", "--embedded", "node", "ls"}, "--embedded runs the daemon in this process"},
	} {
		_, _, err := run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || Code(err) != ExitUsage {
			t.Errorf("nerve %s: %v (exit %d); want a usage error saying %q", strings.Join(tc.args, " "), err, Code(err), tc.want)
		}
	}
}

// TestContextsFile: the file is written whole, 0600, and a broken one is
// named in the error.
func TestContextsFile(t *testing.T) {
	dir := t.TempDir()
	p := paths.Under(dir, filepath.Join(dir, "run"))
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Paths: p, Getenv: func(string) string { return "" }}
	if err := Exec(context.Background(), env, []string{"context", "create", "b", "--host", "ssh://b"}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p.Contexts)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("contexts file: %v, %v; want mode 0600", st, err)
	}
	if err := os.WriteFile(p.Contexts, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = Exec(context.Background(), env, []string{"node", "ls"})
	if err == nil || !strings.Contains(err.Error(), p.Contexts) {
		t.Errorf("a broken contexts file: %v; want its name in the error", err)
	}
}

// TestNerveSSHCommand: NERVE_SSH_COMMAND is split as the shell splits it
// (quotes, variables), as git splits GIT_SSH_COMMAND; NERVE_REMOTE_COMMAND
// is the remote command line as it is.
func TestNerveSSHCommand(t *testing.T) {
	vars := map[string]string{
		"NERVE_HOST":           "ssh://me@build",
		"NERVE_SSH_COMMAND":    `ssh -F "$HOME/my cfg" -o 'ProxyJump=jump host' -i ~/k`,
		"NERVE_REMOTE_COMMAND": "env NERVE_HOME=/srv/n ~/bin/nerve",
		"HOME":                 "/home/me",
	}
	env := &Env{Paths: paths.Under(t.TempDir(), "/run"), Getenv: func(k string) string { return vars[k] }}
	r, err := env.remote()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh", "-F", "/home/me/my cfg", "-o", "ProxyJump=jump host", "-i", "/home/me/k",
		"-o", "ConnectTimeout=30", "-T", "-l", "me", "--", "build", "env NERVE_HOME=/srv/n ~/bin/nerve daemon dial-stdio"}
	if got := r.Args(true); !slices.Equal(got, want) {
		t.Errorf("ssh command:\n got %q\nwant %q", got, want)
	}
	vars["NERVE_SSH_COMMAND"] = `ssh "unclosed`
	if _, err := env.remote(); err == nil || !strings.Contains(err.Error(), "NERVE_SSH_COMMAND") {
		t.Errorf("an unclosed quote: %v; want an error naming NERVE_SSH_COMMAND", err)
	}
}

// TestLocalFilesNotThroughSSH: the commands that work on this machine's
// files refuse a daemon on another machine, saying how to do it there.
func TestLocalFilesNotThroughSSH(t *testing.T) {
	run := contextEnv(t, map[string]string{})
	for _, args := range [][]string{{"env", "set", "A=1"}, {"env", "ls"}, {"log"}, {"node", "auth", "gh"}} {
		_, _, err := run(append([]string{"-H", "ssh://build"}, args...)...)
		cmd := "nerve " + strings.Join(args[:len(args)-1], " ")
		if len(args) == 1 {
			cmd = "nerve log"
		}
		if err == nil || !strings.Contains(err.Error(), "which the daemon on build does not read: run it there (`ssh build "+cmd) || !strings.Contains(err.Error(), "drop -H") {
			t.Errorf("nerve -H ssh://build %s: %v", strings.Join(args, " "), err)
		}
	}
}
