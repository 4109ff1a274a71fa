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
	f.Add("a[$(id)]")
	f.Add("[`x`")
	f.Fuzz(func(t *testing.T, v string) {
		if strings.IndexByte(v, 0) >= 0 {
			return // refused, see TestShellQuotingRefuses
		}
		if arithmeticHazard(v, false) {
			ts, _ := compileString("printf %s ${inputs.v}")
			if _, err := shellEval(ts, &scope{inputs: map[string]any{"v": v}}); err == nil {
				t.Fatalf("%q: a subscript with an expansion was let through", v)
			}
			return // refused, see TestShellArithmeticInjection
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

// TestShellArithmeticInjection: bash evaluates some text as arithmetic —
// `[[ x -eq y ]]`, `(( ))`, `let`, `declare -i`, array subscripts, and
// anything inside $((...)), quoted or not — and arithmetic expands a
// variable's subscript, so the value 'a[$(id)]' runs id there even
// single-quoted. And a backslash right before a reference escapes its
// opening quote. Each command here either is refused or runs without the
// value running as code.
func TestShellArithmeticInjection(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	payloads := []string{
		"a[$(touch " + pwned + ")]",
		"a[`touch " + pwned + "`]",
		"x[${PWD}$(touch " + pwned + ")]",
		"'; touch " + pwned + "; echo '",
		"\"; touch " + pwned + "; echo \"",
		"$(touch " + pwned + ")",
	}
	templates := []string{
		"[[ ${inputs.v} -eq 1 ]]",
		"[[ \"${inputs.v}\" -gt 0 ]]",
		"(( ${inputs.v} ))",
		"(( 1 == '${inputs.v}' ))",
		"let x=${inputs.v}",
		"declare -i n; n=${inputs.v}",
		"a=(); a[${inputs.v}]=1",
		"echo $(( '${inputs.v}' ))",
		"echo $(( \"${inputs.v}\" + 1 ))",
		"echo $(( $(printf %s ${inputs.v}) ))",
		"echo $[ '${inputs.v}' ]",
		"((n = ${inputs.v} + 1))",
		"a=(1); unset a[${inputs.v}]",
		"declare -a b; b[1+${inputs.v}]=2",
		"declare -i x; x=a[${inputs.v}]",
		"x=a[${inputs.v}]; echo $((x))",
		"x=${inputs.w}${inputs.v}; echo $((x))",
		"[[ ${inputs.v} == x ]] || [[ ${inputs.w}${inputs.v} -eq 1 ]]",
		"x=\"a[${inputs.v}]\"; echo $((x))",
		"x='a['${inputs.v}; echo $((x))",
		"printf %s \\${inputs.v}",
		"printf %s \"\\${inputs.v}\"",
		"printf %s $'\\${inputs.v}'",
	}
	refused := 0
	for _, tmpl := range templates {
		for _, p := range payloads {
			ts, err := compileString(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			cmd, err := shellEval(ts, &scope{inputs: map[string]any{"v": p, "w": "a["}})
			if err != nil {
				refused++
				continue
			}
			_ = exec.Command("bash", "-c", cmd).Run()
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("%q with %q: the value ran as code: bash -c %q", tmpl, p, cmd)
			}
		}
	}
	if refused == 0 {
		t.Fatal("nothing was refused")
	}
	// Values that merely look like lists or prices still pass.
	for _, v := range []string{"[1, 2]", "costs $5 [approx]", "a[1]", "[x] $ y", "$(date) [ok]"} {
		for _, tmpl := range []string{"printf %s ${inputs.v}", "[[ -n ${inputs.v} ]] && echo ${inputs.v}", "[ \"${inputs.v}\" = x ] || echo \"${inputs.v}\""} {
			ts, _ := compileString(tmpl)
			if _, err := shellEval(ts, &scope{inputs: map[string]any{"v": v}}); err != nil {
				t.Errorf("%q in %q refused: %v", v, tmpl, err)
			}
		}
	}
	// The messages say what to do.
	for _, tt := range []struct{ tmpl, v, want string }{
		{"[[ ${inputs.v} -eq 1 ]]", "a[$(id)]", "evaluates arithmetic"},
		{"printf %s \\${inputs.v}", "x", "remove the backslash"},
		{"echo $(( '${inputs.v}' ))", "a[$(id)]", "only a number"},
	} {
		ts, _ := compileString(tt.tmpl)
		_, err := shellEval(ts, &scope{inputs: map[string]any{"v": tt.v}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q with %q: %v; want %q", tt.tmpl, tt.v, err, tt.want)
		}
	}
	// A '$' right before a reference cannot be written in a template
	// ($${ is a literal ${), but the quoting refuses it all the same.
	ts, _ := compileString("echo ${inputs.v}")
	ts.lits[0] = "echo $"
	if _, err := shellEval(ts, &scope{inputs: map[string]any{"v": "x"}}); err == nil || !strings.Contains(err.Error(), "after a '$'") {
		t.Errorf("a '$' before the reference: %v", err)
	}
}
