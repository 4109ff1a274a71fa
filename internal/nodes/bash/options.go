package bash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Defaults of Options.
const (
	DefaultTimeout   = 10 * time.Minute
	DefaultOutputCap = 1 << 20
)

// Options are the kind-specific settings of a bash node (Spec.Options).
type Options struct {
	// Timeout is the default time a command may run before it is
	// interrupted; a call's timeout_s overrides it. 0 means DefaultTimeout.
	Timeout node.Duration `json:"timeout,omitempty"`
	// OutputCap is the number of output bytes a call keeps; the rest is
	// counted and dropped. 0 means DefaultOutputCap.
	OutputCap int64 `json:"output_cap,omitempty"`
}

func decodeOptions(spec *node.Spec) (Options, error) {
	var o Options
	if err := spec.DecodeOptions(&o); err != nil {
		return o, err
	}
	if o.Timeout < 0 {
		return o, fmt.Errorf("options of bash node %q: timeout %s is negative (use e.g. \"30s\", or leave it out for %s)", spec.ID, time.Duration(o.Timeout), DefaultTimeout)
	}
	if o.OutputCap < 0 {
		return o, fmt.Errorf("options of bash node %q: output_cap %d is negative (use a number of bytes, or leave it out for %d)", spec.ID, o.OutputCap, DefaultOutputCap)
	}
	if o.Timeout == 0 {
		o.Timeout = node.Duration(DefaultTimeout)
	}
	if o.OutputCap == 0 {
		o.OutputCap = DefaultOutputCap
	}
	return o, nil
}

// ToolName is the name of the node's one tool.
const ToolName = "bash"

func newTool(o Options) *mcp.Tool {
	return &mcp.Tool{
		Name:  ToolName,
		Title: "Run a bash command",
		// A graph passes its values to command as args, and may give argv
		// (docs/graphs.md, "Values and the shell").
		Meta: mcp.Meta{node.MetaShell: "command", node.MetaShellArgs: "args", node.MetaArgv: "argv"},
		Description: "Run a command in a persistent bash shell and return its output (stdout and stderr " +
			"interleaved, in order) and its exit status. The shell keeps its state between calls: the " +
			"working directory (cd), shell and exported variables, functions and aliases persist. " +
			"The command may span several lines (scripts, heredocs). It gets no input: stdin is " +
			"/dev/null, so interactive programs (editors, pagers, password prompts, REPLs) see EOF; " +
			"pass input with pipes, heredocs or flags instead. A non-zero exit status marks the result " +
			"as an error and ends it with a line like [exit 2]. Output beyond " + formatSize(o.OutputCap, true) +
			" is cut. A command running longer than its timeout (default " + time.Duration(o.Timeout).String() +
			") is stopped and the shell keeps its state; background jobs (cmd &) keep running between calls. " +
			"`exit`, and a failure after `set -e`, end the shell: its state is lost and the next call " +
			"runs in a fresh shell. Put such scripts in a subshell, ( set -e; ... ). " +
			"Values the command uses can be given apart from it in args, as its $1, $2, …: the shell " +
			"expands them as data, never as code. Instead of command, argv runs one program with exactly " +
			"those arguments and no shell syntax at all (in the shell's working directory and environment).",
		InputSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"command": {
					Type:        "string",
					Description: "Bash command line or script to run, e.g. \"ls -la\" or \"cd src && make test\". Give command or argv.",
				},
				"args": {
					Type:        "array",
					Items:       &jsonschema.Schema{Type: "string"},
					Description: "Values for the command's positional parameters $1, $2, … (for this command only), e.g. command \"wc -l \\\"$1\\\"\", args [\"my file.txt\"].",
				},
				"argv": {
					Type:        "array",
					Items:       &jsonschema.Schema{Type: "string"},
					MinItems:    jsonschema.Ptr(1),
					Description: "A program and its arguments, run as they are with no shell syntax, e.g. [\"git\", \"log\", \"--oneline\"]. Give command or argv.",
				},
				"timeout_s": {
					Type: "number",
					Description: "Seconds the command may run before it is stopped (default " +
						fmt.Sprint(time.Duration(o.Timeout).Seconds()) + ").",
					ExclusiveMinimum: jsonschema.Ptr(0.0),
				},
			},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
		Annotations: &mcp.ToolAnnotations{
			Title:           "bash",
			DestructiveHint: jsonschema.Ptr(true),
			OpenWorldHint:   jsonschema.Ptr(true),
		},
	}
}

// args are the arguments of the bash tool.
type args struct {
	Command  string   `json:"command"`
	Args     []string `json:"args"`
	Argv     []string `json:"argv"`
	TimeoutS *float64 `json:"timeout_s"`
}

// argvCommand runs an argv: its words are the positional parameters, and
// exec runs the program they name (never a function, builtin or alias) in
// a subshell, so the shell parses none of them.
const argvCommand = `( exec -- "$@" )`

func parseArgs(raw json.RawMessage) (args, error) {
	var a args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("%w: bash wants {\"command\": \"...\", \"args\": [...], \"timeout_s\": N} or {\"argv\": [...]}: %v", node.ErrBadArgs, err)
	}
	if a.Argv != nil {
		if a.Command != "" || a.Args != nil {
			return a, fmt.Errorf("%w: give argv alone, or command (with args), not both", node.ErrBadArgs)
		}
		if len(a.Argv) == 0 || a.Argv[0] == "" {
			return a, fmt.Errorf("%w: argv needs the program first (e.g. {\"argv\": [\"ls\", \"-la\"]})", node.ErrBadArgs)
		}
		a.Command, a.Args = argvCommand, a.Argv
	}
	if strings.TrimSpace(a.Command) == "" {
		return a, fmt.Errorf("%w: command is missing or empty (e.g. {\"command\": \"ls -la\"})", node.ErrBadArgs)
	}
	if strings.IndexByte(a.Command, 0) >= 0 {
		return a, fmt.Errorf("%w: command contains a NUL byte, which bash cannot hold; write such data with printf '\\0'", node.ErrBadArgs)
	}
	for _, v := range a.Args {
		if strings.IndexByte(v, 0) >= 0 {
			return a, fmt.Errorf("%w: a value of args or argv contains a NUL byte, which no shell variable can hold; pass such data through a file", node.ErrBadArgs)
		}
	}
	if a.TimeoutS != nil && !(*a.TimeoutS > 0) {
		return a, fmt.Errorf("%w: timeout_s must be a positive number of seconds, got %v", node.ErrBadArgs, *a.TimeoutS)
	}
	return a, nil
}

// Result is the StructuredContent of a bash call.
type Result struct {
	// ExitCode is the command's exit status; 130 when it was interrupted,
	// 124 when it timed out (the conventions of bash and timeout(1)).
	ExitCode int `json:"exit_code"`
	// OutputBytes is the size of the whole output, kept or not.
	OutputBytes int64 `json:"output_bytes"`
	// Truncated says output was cut at the node's output_cap.
	Truncated bool `json:"truncated"`
	// OutputFile holds the whole output of a cut call.
	OutputFile  string `json:"output_file,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	// ShellExited says the shell itself ended during the call (exit, set
	// -e, killed): its state is lost, and the next call starts a fresh
	// shell.
	ShellExited bool `json:"shell_exited,omitempty"`
	// FreshShell says this call ran in a shell started for it, and why the
	// last one ended: the folder, variables and functions of before are
	// gone.
	FreshShell string `json:"fresh_shell,omitempty"`
}

// outcome is what a call produced, before it becomes a CallToolResult.
type outcome struct {
	out      []byte // kept output, at most the cap
	total    int64  // bytes of output seen
	exit     int
	timedOut time.Duration // > 0: stopped by its timeout
	intr     bool          // stopped by Interrupt
	died     string        // the shell ended: why
	ended    string        // the command that ran when it ended, as commandLine quotes it
	fresh    string        // the call ran in a fresh shell: why the last one ended
	file     string        // the whole output, when it was cut
	fileErr  error         // why the file does not hold all of it
}

const (
	exitInterrupted = 130
	exitTimedOut    = 124
)

func (oc *outcome) result() *mcp.CallToolResult {
	var b strings.Builder
	out := oc.out
	truncated := oc.total > int64(len(out))
	if truncated {
		// Cut at a rune boundary so the kept text stays valid UTF-8.
		for i := 0; i < utf8.UTFMax && len(out) > 0 && !utf8.Valid(out[max(0, len(out)-utf8.UTFMax):]); i++ {
			out = out[:len(out)-1]
		}
	}
	b.Grow(len(out) + 128)
	b.Write(out)
	status := func(line string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	r := Result{ExitCode: oc.exit, OutputBytes: oc.total, Truncated: truncated, FreshShell: oc.fresh}
	if truncated {
		line := fmt.Sprintf("[output truncated: %s total, first %s kept", formatSize(oc.total, false), formatSize(int64(len(oc.out)), true))
		switch {
		case oc.file != "" && oc.fileErr == nil:
			line += "; all of it is in " + oc.file
			r.OutputFile = oc.file
		case oc.file != "":
			line += fmt.Sprintf("; %s holds part of it (%v)", oc.file, oc.fileErr)
			r.OutputFile = oc.file
		case oc.fileErr != nil:
			line += fmt.Sprintf("; keeping all of it failed: %v", oc.fileErr)
		}
		status(line + "]")
	}
	switch {
	case oc.died == stoppedReason:
		r.ShellExited = true
		status("[" + oc.died + "; the shell's state is lost, restart the node]")
	case oc.died != "":
		r.ShellExited = true
		who := "the shell ended"
		if oc.ended != "" {
			who = oc.ended + " ended the shell"
		}
		status("[" + who + ": " + oc.died + "; its state (folder, variables, functions, jobs) is lost, and the next call starts a fresh shell]")
	case oc.timedOut > 0:
		r.ExitCode, r.TimedOut = exitTimedOut, true
		status(fmt.Sprintf("[timed out after %s: the command was stopped, the shell keeps its state]", oc.timedOut))
	case oc.intr:
		r.ExitCode, r.Interrupted = exitInterrupted, true
		status("[interrupted: the command was stopped, the shell keeps its state]")
	case oc.exit != 0:
		status(fmt.Sprintf("[exit %d]", oc.exit))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: r,
		IsError:           r.ExitCode != 0 || r.ShellExited,
	}
}

// formatSize writes n bytes for people: binary units (KiB, MiB) when binary,
// decimal (kB, MB) otherwise, one decimal.
func formatSize(n int64, binary bool) string {
	unit, names := 1000.0, []string{"kB", "MB", "GB", "TB"}
	if binary {
		unit, names = 1024, []string{"KiB", "MiB", "GiB", "TiB"}
	}
	if float64(n) < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v := float64(n) / unit
	i := 0
	for v >= unit && i < len(names)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, names[i])
}

// stoppedReason is why a call's shell ended when the node was stopped
// under it.
const stoppedReason = "the node was stopped"

// commandLine is a command as a status line names it: its first line, cut
// to 60 runes, in backquotes.
func commandLine(command string) string {
	line, _, more := strings.Cut(strings.TrimSpace(command), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > 60 {
		line, more = string(r[:59]), true
	}
	if more {
		line += "…"
	}
	if line == "" || line == argvCommand {
		return ""
	}
	return "`" + line + "`"
}

// trimExitEcho drops the "exit" an interactive bash writes to its stderr
// (the command's output here) when the exit builtin ends it, so that an
// `exit 3`'s result does not begin with the word as if it were an error
// message.
func trimExitEcho(out []byte, status int) []byte {
	if status >= 128 {
		return out // a signal: bash wrote nothing
	}
	if b, ok := bytes.CutSuffix(out, []byte("exit\n")); ok && (len(b) == 0 || b[len(b)-1] == '\n') {
		return b
	}
	return out
}
