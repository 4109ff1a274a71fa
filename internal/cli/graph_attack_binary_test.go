//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// attackTemplates are issue 26's attacks on a graph's shell commands: each
// hands a value to a second interpreter, or puts it where bash evaluates
// it. Every one is refused when the graph is added or replaced.
var attackTemplates = []string{
	`bash -c "echo ${inputs.x}"`,
	`sh -c 'echo ${inputs.x}'`,
	`sh -c "echo ${inputs.x}"`,
	`zsh -c "echo ${inputs.x}"`,
	`dash -c "echo ${inputs.x}"`,
	`eval "echo ${inputs.x}"`,
	`source ${inputs.x}`,
	`. ${inputs.x}`,
	`echo a | sed "s/a/${inputs.x}/"`,
	`echo a | sed -e "s/a/${inputs.x}/e"`,
	`echo a | awk '{print "${inputs.x}"}'`,
	`echo a | awk "{print \"${inputs.x}\"}"`,
	`python3 -c "print('${inputs.x}')"`,
	`perl -e "print '${inputs.x}'"`,
	`node -e "console.log('${inputs.x}')"`,
	`ruby -e "puts '${inputs.x}'"`,
	`xargs echo ${inputs.x}`,
	`echo ${inputs.x} | xargs echo`,
	`echo ${inputs.x} | bash`,
	`find . -maxdepth 0 -exec sh -c "echo ${inputs.x}" \;`,
	`env bash -c "echo ${inputs.x}"`,
	`exec bash -c "echo ${inputs.x}"`,
	`command bash -c "echo ${inputs.x}"`,
	`sudo -n bash -c "echo ${inputs.x}"`,
	`nice -n 1 bash -c "echo ${inputs.x}"`,
	`timeout 5 bash -c "echo ${inputs.x}"`,
	`ssh localhost echo ${inputs.x}`,
	`${inputs.x}`,
	`echo $(( ${inputs.x} ))`,
	`[[ ${inputs.x} -eq 1 ]]`,
	`printf -v ${inputs.x} %s x`,
}

// valueTemplates let a value reach a command as data; the run-time check
// refuses one that would be an option (git log --output=FILE).
func valueTemplates(repo string) []string {
	return []string{
		`printf '<%s>' ${inputs.x}`,
		`git -C ` + repo + ` log --oneline ${inputs.x}`,
		`X=${inputs.x} bash -c 'printf "<%s>" "$X"'`,
		`printf %s ${inputs.x} | python3 -c 'import sys; print("<" + sys.stdin.read() + ">")'`,
		`cat <<EOF` + "\n<${inputs.x}>\nEOF",
	}
}

// TestBinaryGraphAttacks (issue 26, item 2): through the real binary, each
// attack template is refused at FILE:LINE:COLUMN when added and when it
// would replace a graph; and every command that takes a value, called
// with each payload through `nerve call` and through `nerve mcp serve`,
// creates no file.
func TestBinaryGraphAttacks(t *testing.T) {
	n := newRealNerve(t)
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Skipf("git: %v: %s", err, out)
		}
	}
	file := filepath.Join(work, "F")
	payloads := []string{"$(touch " + file + ")", "`touch " + file + "`", "x\ntouch " + file, "'; touch " + file + " #", "--output=" + file}
	n.Must("node", "add", "bash", "w", "--cwd", work)
	graph := func(name, step string) string {
		path := filepath.Join(n.home, name+".yaml")
		os.WriteFile(path, []byte("inputs: {x: string}\nsteps:\n  s: "+step+"\n"), 0o600)
		return path
	}
	shellStep := func(command string) string {
		q, _ := json.Marshal(command)
		return "{call: w.bash, args: {command: " + string(q) + "}}"
	}

	n.Must("graph", "add", "good", "--from", graph("good", shellStep("echo ${inputs.x}")))
	for i, tmpl := range attackTemplates {
		path := graph(fmt.Sprintf("attack%d", i), shellStep(tmpl))
		for _, verb := range []string{"add", "edit"} {
			name := fmt.Sprintf("attack%d", i)
			if verb == "edit" {
				name = "good"
			}
			_, errs, code := n.Run("graph", verb, name, "--from", path)
			if code != ExitUsage || !strings.Contains(errs, path+":3:") || !strings.Contains(errs, "in the command of w.bash: ") {
				t.Errorf("graph %s %s\n  exit %d: %s\n  want exit %d naming %s:3:COL and why", verb, tmpl, code, errs, ExitUsage, path)
			}
		}
	}

	var names []string
	for i, tmpl := range valueTemplates(repo) {
		names = append(names, fmt.Sprintf("value%d", i))
		n.Must("graph", "add", names[i], "--from", graph(names[i], shellStep(tmpl)))
	}
	names = append(names, "argv0", "argv1")
	n.Must("graph", "add", "argv0", "--from", graph("argv0", `{call: w.bash, args: {argv: [git, -C, `+repo+`, log, --oneline, "${inputs.x}"]}}`))
	n.Must("graph", "add", "argv1", "--from", graph("argv1", `{call: w.bash, args: {argv: [printf, "<%s>", "${inputs.x}"]}}`))

	check := func(how, name, payload, text string) {
		t.Helper()
		if _, err := os.Stat(file); err == nil {
			t.Fatalf("%s %s with %q ran the value as code: %s exists\n%s", how, name, payload, file, text)
		}
		if strings.HasPrefix(payload, "--") {
			if strings.Contains(name, "value1") || name == "argv0" {
				if !strings.Contains(text, "begins with '-' where git reads options") {
					t.Errorf("%s %s with %q: %q; want the option refused", how, name, payload, text)
				}
			}
			return
		}
		if (name == "value0" || name == "value2" || name == "argv1") && !strings.Contains(text, "<"+payload+">") {
			t.Errorf("%s %s with %q printed %q; want the value whole", how, name, payload, text)
		}
	}
	for _, name := range names {
		for _, p := range payloads {
			b, _ := json.Marshal(map[string]string{"x": p})
			n.Stdin = string(b)
			out, errs, _ := n.Run("call", "@"+name, "run")
			check("nerve call", name, p, out+errs)
		}
	}
	n.Stdin = ""

	c := mcp.NewClient(&mcp.Implementation{Name: "attacker"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, name := range names {
		for _, p := range payloads {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name + ".run", Arguments: map[string]any{"x": p}})
			if err != nil {
				t.Fatalf("calling %s.run: %v", name, err)
			}
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			check("mcp serve", name, p, text)
		}
	}
}
