//go:build unix

package graph

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellQuoting places hostile values into shell commands at every
// kind of place a reference can stand, runs the command with bash and
// checks that the command saw the value as it is and that nothing ran.
func TestShellQuoting(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	payloads := []string{
		"/etc/hostname; touch " + pwned,
		"$(touch " + pwned + ")",
		"`touch " + pwned + "`",
		"a\ntouch " + pwned,
		"it's \"quoted\" \\ $HOME ${HOME}",
		"'; touch " + pwned + "; echo '",
		"\"; touch " + pwned + "; echo \"",
		"-n",
		"",
		"*",
		"x'\"`$(\\\n\t",
	}
	templates := []struct{ name, cmd string }{
		{"word", "printf %s ${inputs.v}"},
		{"glued", "printf %s x${inputs.v}y"},
		{"single quotes", "printf %s 'x${inputs.v}y'"},
		{"double quotes", `printf %s "x${inputs.v}y"`},
		{"command substitution in double quotes", `printf %s "$(printf %s ${inputs.v})"`},
		{"backticks", "printf %s \"`printf %s ${inputs.v}`\""},
		{"ansi-c quotes", "printf %s $'x${inputs.v}y'"},
		{"subshell", "(printf %s ${inputs.v})"},
		{"after a comment line", "# a comment\nprintf %s ${inputs.v}"},
	}
	for _, tt := range templates {
		for _, p := range payloads {
			ts, err := compileString(tt.cmd)
			if err != nil {
				t.Fatal(err)
			}
			sc := &scope{inputs: map[string]any{"v": p}}
			cmd, err := shellEval(ts, sc)
			if err != nil {
				t.Errorf("%s, %q: %v", tt.name, p, err)
				continue
			}
			out, err := exec.Command("bash", "-c", cmd).Output()
			if err != nil {
				t.Errorf("%s, %q: bash -c %q: %v", tt.name, p, cmd, err)
				continue
			}
			want := p
			if strings.Contains(tt.name, "glued") || strings.Contains(tt.name, "quotes") && !strings.Contains(tt.name, "substitution") {
				want = "x" + p + "y"
			}
			if strings.Contains(tt.name, "substitution") || strings.Contains(tt.name, "backticks") {
				want = strings.TrimRight(p, "\n") // $(…) trims trailing newlines
			}
			if string(out) != want {
				t.Errorf("%s, %q: the command %q printed %q, want %q", tt.name, p, cmd, out, want)
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("%s, %q: the value ran as code: %q", tt.name, p, cmd)
			}
		}
	}
}

// TestShellQuotingRefuses: where no quoting is safe, the value is refused.
func TestShellQuotingRefuses(t *testing.T) {
	for _, tt := range []struct{ cmd, v, want string }{
		{"echo ${inputs.v}", "a\x00b", "NUL"},
		{"echo $((${inputs.v} + 1))", "a[$(id)]", "only a number"},
		{"echo hi # ${inputs.v}", "x\nid", "comment"},
		{"cat <<EOF\n${inputs.v}\nEOF", "x", "here-document"},
		{"echo $${X:-${inputs.v}}", "x", "${...} expansion"},
	} {
		ts, err := compileString(tt.cmd)
		if err != nil {
			t.Fatal(err)
		}
		_, err = shellEval(ts, &scope{inputs: map[string]any{"v": tt.v}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q with %q: error %v, want one saying %q", tt.cmd, tt.v, err, tt.want)
		}
	}
	// A number is fine in arithmetic, raw goes in as it is.
	for _, tt := range []struct{ cmd, v, want string }{
		{"echo $((${inputs.v} + 1))", "41", "echo $((41 + 1))"},
		{"echo ${raw inputs.v}", "a; b", "echo a; b"},
		{"echo hi # ${inputs.v}", "x", "echo hi # 'x'"},
	} {
		ts, _ := compileString(tt.cmd)
		got, err := shellEval(ts, &scope{inputs: map[string]any{"v": tt.v}})
		if err != nil || got != tt.want {
			t.Errorf("%q with %q: %q, %v; want %q", tt.cmd, tt.v, got, err, tt.want)
		}
	}
}

// FuzzShellQuoting: whatever a caller sends, the command prints exactly
// it, in a word of its own and inside double quotes.
// go test -fuzz FuzzShellQuoting ./internal/nodes/graph/
func FuzzShellQuoting(f *testing.F) {
	for _, s := range []string{"a", "'", `"`, "$(id)", "`id`", "\\", "\n", "${HOME}", "a'b\"c`d$e\\f\ng"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.IndexByte(v, 0) >= 0 {
			return // refused, see TestShellQuotingRefuses
		}
		for _, tmpl := range []string{"printf %s ${inputs.v}", `printf %s "${inputs.v}"`, "printf %s '${inputs.v}'"} {
			ts, _ := compileString(tmpl)
			cmd, err := shellEval(ts, &scope{inputs: map[string]any{"v": v}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", "-c", cmd).Output()
			if err != nil || string(out) != v {
				t.Fatalf("%q with %q: bash -c %q printed %q (%v)", tmpl, v, cmd, out, err)
			}
		}
	})
}
