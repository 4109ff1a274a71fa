package graphlang

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nerve-dev/nerve/pkg/node"
)

// bashTool is a tool that runs shell code as the bash kind's does.
var bashTool = &mcp.Tool{Name: "bash", InputSchema: map[string]any{"type": "object"},
	Meta: mcp.Meta{node.MetaShell: "command", node.MetaShellArgs: "args", node.MetaArgv: "argv"}}

// shellGraph is a graph whose one step runs command (or, argv) on sh.
func shellGraph(command string, extra string) string {
	q, _ := json.Marshal(command)
	return "inputs: {x: string, y: string}\nsteps:\n  s: {call: sh.bash, args: {command: " + string(q) + "}" + extra + "}\n"
}

func checkShell(t *testing.T, src string) error {
	t.Helper()
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return CheckCalls(d, "me", map[string]*mcp.Tool{"sh.bash": bashTool}, nil, nil)
}

// The attacks of issue 26: a template that hands a value to a second
// interpreter, or to a place where bash evaluates it, is refused when the
// graph is added, at the file's LINE:COLUMN and with why.
var refusedCommands = []struct{ command, why string }{
	{`bash -c "echo ${inputs.x}"`, "argument of bash, a shell"},
	{`sh -c 'echo ${inputs.x}'`, "inside single quotes"},
	{`sh -c "echo ${inputs.x}"`, "argument of sh"},
	{`zsh -c "echo ${inputs.x}"`, "argument of zsh"},
	{`dash -c "echo ${inputs.x}"`, "argument of dash"},
	{`eval ${inputs.x}`, "argument of eval"},
	{`eval "echo ${inputs.x}"`, "argument of eval"},
	{`source ${inputs.x}`, "argument of source"},
	{`. ${inputs.x}`, "argument of ."},
	{`sed "s/a/${inputs.x}/" f.txt`, "script of sed"},
	{`sed -n -e "s/a/${inputs.x}/e" f.txt`, "script of sed"},
	{`sed -ne "s/a/${inputs.x}/p" f.txt`, "script of sed"},
	{`sed --expression="s/a/${inputs.x}/" f.txt`, "script of sed"},
	{`awk '{print "${inputs.x}"}'`, "inside single quotes"},
	{`awk "BEGIN {print \"${inputs.x}\"}"`, "script of awk"},
	{`gawk -f ${inputs.x} f.txt`, "script of gawk"},
	{`python3 -c "print('${inputs.x}')"`, "argument of python3"},
	{`python3.12 -c "print('${inputs.x}')"`, "argument of python3.12"},
	{`perl -e "print '${inputs.x}'"`, "argument of perl"},
	{`node -e "console.log('${inputs.x}')"`, "argument of node"},
	{`ruby -e "puts '${inputs.x}'"`, "argument of ruby"},
	{`xargs echo ${inputs.x}`, "argument of xargs"},
	{`echo ${inputs.x} | xargs touch`, "piped into xargs"},
	{`echo ${inputs.x} | bash`, "piped into bash"},
	{`bash <<< ${inputs.x}`, "redirected into bash"},
	{"python3 <<EOF\nprint('${inputs.x}')\nEOF", "redirected into python3"},
	{`find . -exec sh -c "echo ${inputs.x}" \;`, "argument of sh"},
	{`find . -name a -execdir bash -c ${inputs.x} +`, "argument of bash"},
	{`env bash -c "echo ${inputs.x}"`, "argument of bash"},
	{`env -i PATH=/bin bash -c "echo ${inputs.x}"`, "argument of bash"},
	{`env -S "echo ${inputs.x}"`, "runs its command through a shell"},
	{`exec bash -c "echo ${inputs.x}"`, "argument of bash"},
	{`command bash -c "echo ${inputs.x}"`, "argument of bash"},
	{`sudo -u root bash -c "echo ${inputs.x}"`, "argument of bash"},
	{`sudo -s echo ${inputs.x}`, "runs its command through a shell"},
	{`nice -n 5 sh -c "echo ${inputs.x}"`, "argument of sh"},
	{`timeout 5 sh -c "echo ${inputs.x}"`, "argument of sh"},
	{`timeout -s KILL 5 python3 -c ${inputs.x}`, "argument of python3"},
	{`nohup setsid bash -c ${inputs.x}`, "argument of bash"},
	{`sudo --frobnicate x bash -c ${inputs.x}`, "option nerve does not know"},
	{`ssh host echo ${inputs.x}`, "argument of ssh"},
	{`docker run --rm img sh -c ${inputs.x}`, "follows sh in the arguments of docker"},
	{`${inputs.x}`, "names the program"},
	{`${inputs.x} --help`, "names the program"},
	{`exec ${inputs.x}`, "names the program"},
	{`sudo ${inputs.x}`, "names the program"},
	{`$EDITOR ${inputs.x}`, "chosen only when the command runs"},
	{`x=${inputs.x}; eval "$x"`, "argument of eval"},
	{`f() { eval "$1"; }; f ${inputs.x}`, "argument of eval"},
	{`read -r line <<< ${inputs.x}; eval "$line"`, "argument of eval"},
	{`echo $(( ${inputs.x} + 1 ))`, "evaluates arithmetic"},
	{`(( n = ${inputs.x} ))`, "evaluates arithmetic"},
	{`let n=${inputs.x}`, "evaluates arithmetic"},
	{`a[${inputs.x}]=1`, "evaluates arithmetic"},
	{`[[ ${inputs.x} -eq 1 ]]`, "operand of -eq"},
	{`[[ -v ${inputs.x} ]]`, "the name tested by -v"},
	{`test -v ${inputs.x}`, "test -v"},
	{`declare -i n=${inputs.x}`, "declare -i"},
	{`local -n r=${inputs.x}`, "local -n"},
	{`declare ${inputs.x}`, "a name given to declare"},
	{`read ${inputs.x} < /dev/null`, "argument of read"},
	{`printf -v ${inputs.x} %s x`, "printf -v"},
	{`export PATH=${inputs.x}`, "assigned to PATH"},
	{`PS4=${inputs.x} bash -x script.sh`, "assigned to PS4"},
	{`env LD_PRELOAD=${inputs.x} ls`, "assigned to LD_PRELOAD"},
	{`echo >&${inputs.x}`, "file descriptor number"},
	{"echo $${HOME:-${inputs.x}}", "inside a ${...} expansion"},
	{"echo `echo ${inputs.x}`", "inside backticks"},
	{`echo \${inputs.x}`, "after a backslash"},
	{`echo $'${inputs.x}'`, "inside $'...'"},
	{"cat <<'EOF'\n${inputs.x}\nEOF", "quoted"},
	{"cat <<${inputs.x}\nEOF", "not valid bash"},
	{`echo "unclosed ${inputs.x}`, "not valid bash"},
}

func TestShellCommandsRefused(t *testing.T) {
	for _, tt := range refusedCommands {
		err := checkShell(t, shellGraph(tt.command, ""))
		if err == nil || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "3:") {
			t.Errorf("%s\n  got  %v\n  want a refusal at 3:COL saying %q", tt.command, err, tt.why)
		}
	}
}

// unsafe_shell lets a value reach a second interpreter (with a warning),
// but not a place where the shell expands no variable at all.
func TestUnsafeShellOptsOut(t *testing.T) {
	src := shellGraph(`bash -c "echo ${inputs.x}"`, ", unsafe_shell: true")
	if err := checkShell(t, src); err != nil {
		t.Fatalf("unsafe_shell: %v", err)
	}
	d, _ := Parse([]byte(src))
	if w := ShellWarnings(d, map[string]*mcp.Tool{"sh.bash": bashTool}); len(w) != 1 || !strings.Contains(w[0].Error(), "3:3: step s: unsafe_shell") {
		t.Errorf("warnings = %v", w)
	}
	if err := checkShell(t, shellGraph(`echo '${inputs.x}'`, ", unsafe_shell: true")); err == nil || !strings.Contains(err.Error(), "single quotes") {
		t.Errorf("a reference in single quotes with unsafe_shell: %v", err)
	}
	if err := checkShell(t, "inputs: {x: string}\nsteps:\n  s: {call: sh.bash, args: {command: 'eval \"$1\"', args: [\"${inputs.x}\"]}}\n"); err == nil || !strings.Contains(err.Error(), "args of sh.bash holds references") {
		t.Errorf("values given in args by hand: %v", err)
	}
	if _, err := Parse([]byte(shellGraph(`echo ${raw inputs.x}`, ""))); err == nil || !strings.Contains(err.Error(), "raw is gone") {
		t.Errorf("${raw ...}: %v", err)
	}
}

// Where a value is safe, the command keeps its text and gets the value
// as a quoted positional parameter: one word, whatever it holds.
func TestShellCommandText(t *testing.T) {
	for _, tt := range []struct{ command, text string }{
		{`wc -l ${inputs.x}`, `wc -l "${1}"`},
		{`ls ${inputs.x}/a.log "${inputs.x}"`, `ls "${1}"/a.log "${1}"`},
		{`echo "${inputs.x}-${inputs.y}" ${inputs.y}`, `echo "${1}-${2}" "${2}"`},
		{`echo $(basename ${inputs.x})`, `echo $(basename "${1}")`},
		{"cat <<EOF\n${inputs.x}\nEOF", "cat <<EOF\n${1}\nEOF"},
		{`case ${inputs.x} in ${inputs.y}) echo same;; esac`, `case "${1}" in "${2}") echo same;; esac`},
		{`[[ ${inputs.x} == *.go ]]`, `[[ "${1}" == *.go ]]`},
		{`sed -i s/a/b/ ${inputs.x}`, `sed -i s/a/b/ "${1}"`},
		{`awk -v v=${inputs.x} '{print v}' f.txt`, `awk -v v="${1}" '{print v}' f.txt`},
		{`echo ${inputs.x} | python3 script.py`, `echo "${1}" | python3 script.py`},
		{`X=${inputs.x} python3 -c 'import os; print(os.environ["X"])'`, `X="${1}" python3 -c 'import os; print(os.environ["X"])'`},
		{`timeout 5 git log -- ${inputs.x}`, `timeout 5 git log -- "${1}"`},
		{`grep -c x ${inputs.x} # count`, `grep -c x "${1}" # count`},
		{`> ${inputs.x} echo ${inputs.y}`, `> "${1}" echo "${2}"`},
	} {
		if err := checkShell(t, shellGraph(tt.command, "")); err != nil {
			t.Errorf("%s: refused: %v", tt.command, err)
			continue
		}
		ts, _ := compileString(tt.command)
		if got := ts.shellCommand().text; got != tt.text {
			t.Errorf("%s\n  ran as %s\n  want   %s", tt.command, got, tt.text)
		}
	}
}

// attackPayloads are what a caller who wants to run a command gives.
func attackPayloads(file string) []string {
	return []string{"$(touch " + file + ")", "`touch " + file + "`", "x\ntouch " + file, "'; touch " + file + " #", "\"; touch " + file + "; \"", "--output=" + file, "a[$(touch " + file + ")]"}
}

// The commands a graph may run, run by bash with every payload as the
// value: no file appears, and each value arrives whole or the step fails
// before anything runs.
func TestShellValuesNeverRun(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "F")
	for _, command := range []string{
		`printf '<%s>' ${inputs.x}`,
		`printf '<%s>' "${inputs.x}" "a ${inputs.x} b" $(printf %s ${inputs.x})`,
		`n=${inputs.x}; printf '<%s>' "$n"`,
		`printf '<%s>' -- ${inputs.x}`,
		`cat <<EOF` + "\n${inputs.x}\nEOF",
		`git log ${inputs.x}`,
	} {
		ts, _ := compileString(command)
		for _, p := range attackPayloads(file) {
			v, err := (&Template{v: map[string]any{"command": ts}}).EvalArgs(&Scope{Inputs: map[string]any{"x": p}}, node.ShellParamsOf(bashTool.Meta), false)
			if err != nil {
				if !strings.Contains(err.Error(), "begins with '-'") && !strings.Contains(err.Error(), "subscript") {
					t.Errorf("%s with %q: %v", command, p, err)
				}
				continue
			}
			args := v.(map[string]any)
			argv := []string{"-c", args["command"].(string), "bash"}
			for _, a := range args["args"].([]any) {
				argv = append(argv, a.(string))
			}
			cmd := exec.Command("bash", argv...)
			cmd.Dir = dir
			out, _ := cmd.CombinedOutput()
			if _, err := os.Stat(file); err == nil {
				t.Fatalf("%s with %q ran the value as code: %s", command, p, out)
			}
			if strings.HasPrefix(command, "printf") && !strings.Contains(string(out), "<"+p+">") {
				t.Errorf("%s with %q printed %q", command, p, out)
			}
		}
	}
}

// An argv's program is written in the graph; a value in an argument is
// data, except where it would be an option.
func TestArgvSteps(t *testing.T) {
	argv := func(list string) string {
		return "inputs: {x: string}\nsteps:\n  s: {call: sh.bash, args: {argv: " + list + "}}\n"
	}
	if err := checkShell(t, argv(`[git, log, "--", "${inputs.x}"]`)); err != nil {
		t.Errorf("a plain argv: %v", err)
	}
	for list, want := range map[string]string{
		`["${inputs.x}", a]`:            "names the program",
		`[bash, -c, "${inputs.x}"]`:     "argument of bash",
		`[env, python3, "${inputs.x}"]`: "argument of python3",
		`"${inputs.x}"`:                 "must be a list",
	} {
		if err := checkShell(t, argv(list)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("argv %s: %v, want %q", list, err, want)
		}
	}
	d, _ := Parse([]byte(argv(`[git, log, "${inputs.x}"]`)))
	sp := node.ShellParamsOf(bashTool.Meta)
	if _, err := d.Steps[0].Args.EvalArgs(&Scope{Inputs: map[string]any{"x": "--output=F"}}, sp, false); err == nil || !strings.Contains(err.Error(), "begins with '-' where git reads options") {
		t.Errorf("an option in argv: %v", err)
	}
	v, err := d.Steps[0].Args.EvalArgs(&Scope{Inputs: map[string]any{"x": "$(id)"}}, sp, false)
	if got := v.(map[string]any)["argv"]; err != nil || got.([]any)[2] != "$(id)" {
		t.Errorf("argv value: %v %v", got, err)
	}
}

// FuzzShellTemplate: any string compiles as a shell command without
// panicking, and one that is accepted runs as valid bash in which each
// reference is still an expansion.
func FuzzShellTemplate(f *testing.F) {
	for _, tt := range refusedCommands {
		f.Add(tt.command)
	}
	f.Add(`wc -l ${inputs.x} "${inputs.x}" <<EOF` + "\n${inputs.x}\nEOF")
	f.Add(`f() { echo "$@"; }; f ${inputs.x} | sed -e s/a/b/ -- ${inputs.x}`)
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := compileString(s)
		if err != nil || ts == nil {
			return
		}
		c := compileShell(ts)
		if len(c.problems) > 0 {
			return
		}
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(c.text), ""); err != nil {
			t.Fatalf("%q was accepted, but runs as %q, which is not bash: %v", s, c.text, err)
		}
		for n := 1; n <= c.slots; n++ {
			if !strings.Contains(c.text, "${"+itoa(n)+"}") {
				t.Fatalf("%q runs as %q, without $%d", s, c.text, n)
			}
		}
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A refusal names the line and column where the reference is written,
// inside a flow string with escapes or a block of several lines.
func TestShellRefusalPlace(t *testing.T) {
	for src, want := range map[string]string{
		shellGraph(`echo ${inputs.x}; bash -c "echo ${inputs.x}"`, ""):                                                                   "3:72: step s: ${inputs.x} in the command of sh.bash: it is an argument of bash",
		"inputs: {x: string}\nsteps:\n  s:\n    call: sh.bash\n    args:\n      command: |\n        echo ok\n        eval ${inputs.x}\n": "8:14: step s: ${inputs.x} in the command of sh.bash: it is an argument of eval",
	} {
		if err := checkShell(t, src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n  got  %v\n  want %s", src, err, want)
		}
	}
}
