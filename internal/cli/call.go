package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chzyer/readline"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/callview"
	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

func callCmd() *Command {
	return &Command{
		Name:    "call",
		Summary: "run one Commander line and exit",
		Usage:   "call LINE...",
		Help: `LINE is a Commander line. Each word the shell hands nerve stays one
word: k="a b" is one argument, and a single-tool node gets the words quoted
for a shell where needed (nerve call @bash echo "a   b" prints a   b). One
word after the node is taken as it is: nerve call @bash 'ls | wc -l'.
The arguments may also come as JSON (or a single-tool node's text) on
stdin: end the line with - (nerve call @fs read_file - < args.json); with
no arguments, a tool that requires some reads them from stdin when stdin
is not a terminal.
The answer goes to stdout, errors to stderr. Exit codes: 0 done, 1 could
not do it, 2 bad input, 3 the tool ran and reported an error, 4 its output
was cut, 130 interrupted (Ctrl-C; 143 for SIGTERM).
Flags go before LINE (nerve --json call @fs ...): everything after the
first word of LINE belongs to it.

Examples:
  nerve call @fs read_file '{"path":"/tmp/a"}'
  nerve call @fs read_file path=/tmp/a
  nerve call @think sequentialthinking thought="first step" thoughtNumber=1 totalThoughts=2 nextThoughtNeeded=true
  nerve call @bash ls -la
  echo '{"path":"/tmp/a"}' | nerve call @fs read_file -
  nerve call @fs ?              list fs's tools
  nerve call @fs read_file ?    help for one tool
  nerve --json call @fs read_file path=/tmp/a`,
		RawArgs:  true,
		Complete: "line",
		Run:      runCall,
	}
}

func runCall(ctx context.Context, env *Env, inv *Invocation) (err error) {
	words := inv.Args
	dash := len(words) >= 2 && words[len(words)-1] == "-"
	if dash {
		words = words[:len(words)-1]
	}
	line := callLine(words)
	if line == "" {
		return usagef(inv, "`nerve call` needs a Commander line, e.g. `nerve call @bash ls`")
	}
	if line[0] == ':' {
		ln, err := commander.Parse(line, commander.NewIndex(nil), nil)
		if err != nil {
			return usagef(inv, "%v", err)
		}
		return Exec(ctx, env, ln.Argv)
	}
	ctx, endTrace := env.traceCall(ctx, lineNode(line)) // trace.go
	defer func() { endTrace(err) }()
	s, err := env.callSession(ctx)
	if err != nil {
		return err
	}
	// SIGINT and SIGTERM cancel the call in the daemon. Caught, not left
	// to their default: a shell starts a background job (`nerve call … &`)
	// with SIGINT ignored, and the call would run on. A process that runs
	// this one command leaves them caught until it exits: signal.Stop
	// waits for the runtime's signal thread (docs/performance.md).
	sctx, stop := notifyContext(ctx)
	if !env.oneCommand {
		defer stop()
	}
	// One request: the daemon parses the line against the node's tools
	// and makes the call. A line it does not call (help, a line that does
	// not parse, arguments to come from stdin) comes back with the node's
	// tools, and is parsed here as the Commander would, to say what is
	// wrong or to read stdin. Only the named node's tools are needed, and
	// an unknown node is reported by the daemon, which lists the
	// session's nodes.
	steps := &callview.Steps{}
	show := func(id string) func(api.CallLine) {
		return func(l api.CallLine) { showCallLine(env, steps, id, l) }
	}
	cat := map[string][]*mcp.Tool{}
	var note string // what the node's tools are worth, when it is not running
	if id := lineNode(line); id != "" {
		var tools []*mcp.Tool
		if dash {
			tools, err = mcpclient.Tools(ctx, s, id)
		} else {
			var res *mcp.CallToolResult
			res, tools, err = mcpclient.CallLine(sctx, s, id, line, noteState(&note, show(id)))
			if err != nil && sctx.Err() != nil && ctx.Err() == nil {
				return interrupted(ctx, sctx, s, id, line)
			}
			if err == nil && res != nil {
				return printCall(env, res)
			}
			if errors.Is(err, client.ErrBadRequest) && strings.Contains(err.Error(), `unknown field "line"`) {
				// A daemon older than this nerve parses no lines: ask
				// for the tools and parse here, as nerve did then.
				tools, err = mcpclient.Tools(ctx, s, id)
			}
		}
		if err != nil {
			return err
		}
		cat[id] = tools
	}
	idx := commander.NewIndex(cat)
	ln, err := commander.Parse(line, idx, nil)
	if ln, err = argsFromStdin(env, inv, idx, ln, err, dash, len(words)); err != nil {
		return err
	}
	switch ln.Kind {
	case commander.Empty:
		return usagef(inv, "`nerve call` needs a Commander line, e.g. `nerve call @bash ls`")
	case commander.Command:
		return Exec(ctx, env, ln.Argv)
	case commander.NodeHelp:
		if env.JSON {
			return printJSON(env, cat[ln.Node])
		}
		_, err := fmt.Fprint(env.Stdout, asCallLines(commander.RenderToolList(ln.Node, cat[ln.Node], nil)))
		printNote(env, note)
		return err
	case commander.ToolHelp:
		tools := cat[ln.Node]
		for _, t := range tools {
			if t.Name == ln.Tool {
				if env.JSON {
					return printJSON(env, t)
				}
				_, err := fmt.Fprint(env.Stdout, asCallLines(commander.RenderToolHelp(ln.Node, t, len(tools) == 1, nil)))
				printNote(env, note)
				return err
			}
		}
		return fmt.Errorf("node %q has no tool %q", ln.Node, ln.Tool)
	}
	res, err := mcpclient.Call(sctx, s, ln.Node, ln.Tool, ln.Args, show(ln.Node))
	if err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			return &interruptedError{sig: signalOf(sctx), msg: fmt.Sprintf("interrupted: the call to @%s %s was cancelled (the node was told)", ln.Node, ln.Tool)}
		}
		return err
	}
	return printCall(env, res)
}

// printCall prints a call's result as `nerve call` does and returns how
// the command ends: errToolFailed for a tool that reported an error,
// errOutputCut for output its node cut.
func printCall(env *Env, res *mcp.CallToolResult) error {
	if err := printCallResult(env, res); err != nil {
		return err
	}
	return outputCut(res)
}

// printCallResult prints a call's result, as JSON with --json, and returns
// errToolFailed for a tool that reported an error.
func printCallResult(env *Env, res *mcp.CallToolResult) error {
	if env.JSON {
		if err := printJSON(env, res); err != nil {
			return err
		}
	} else if err := printResult(env, res); err != nil {
		return err
	}
	if res.IsError {
		return errToolFailed
	}
	return nil
}

// noteState keeps the reason of a state line the daemon sends before a
// node's tools (commander.NodeNote) in *note, and passes every line on.
func noteState(note *string, show func(api.CallLine)) func(api.CallLine) {
	return func(l api.CallLine) {
		if l.Kind == api.LineState {
			*note = l.Reason
		}
		show(l)
	}
}

// printNote prints what a node's tools are worth when it is not running,
// on stderr after its help: listed is not callable (issue 27).
func printNote(env *Env, note string) {
	if note != "" && !env.JSON {
		fmt.Fprintln(env.Stderr, note)
	}
}

// interrupted is the error of a call line that a signal cancelled (sctx's
// cause). The daemon parsed the line, so the tool it called is learnt
// again here (from the node's tools), to name it.
func interrupted(ctx, sctx context.Context, s *client.Session, id, line string) error {
	tool := "?"
	if tools, err := mcpclient.Tools(ctx, s, id); err == nil {
		if ln, err := commander.Parse(line, commander.NewIndex(map[string][]*mcp.Tool{id: tools}), nil); err == nil && ln.Tool != "" {
			tool = ln.Tool
		}
	}
	return &interruptedError{sig: signalOf(sctx), msg: fmt.Sprintf("interrupted: the call to @%s %s was cancelled (the node was told)", id, tool)}
}

// interruptedError is a call a signal cancelled: the command exits 128
// plus the signal's number, as a shell reports a job the signal ended
// (130 for Ctrl-C; it exited 1; issue 27).
type interruptedError struct {
	sig syscall.Signal
	msg string
}

func (e *interruptedError) Error() string { return e.msg }

// signalCause is the cause of a call's context that a signal ended.
type signalCause struct{ sig syscall.Signal }

func (c signalCause) Error() string        { return c.sig.String() + " signal received" }
func (c signalCause) Is(target error) bool { return target == context.Canceled }

// notifyContext is signal.NotifyContext for SIGINT and SIGTERM that keeps
// which signal came (signalOf).
func notifyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			sig, _ := s.(syscall.Signal)
			cancel(signalCause{sig})
		case <-sctx.Done():
		}
	}()
	return sctx, func() { cancel(nil); signal.Stop(ch) }
}

// signalOf is the signal that ended sctx (notifyContext), SIGINT if none
// is known.
func signalOf(sctx context.Context) syscall.Signal {
	var c signalCause
	if errors.As(context.Cause(sctx), &c) && c.sig != 0 {
		return c.sig
	}
	return syscall.SIGINT
}

// asCallLines rewrites the Commander lines of help (its examples, and the
// hints that end a tool list) as the `nerve call` commands a shell runs:
// `@fs read_file {"path": "P"}` becomes `nerve call @fs read_file
// '{"path": "P"}'`.
func asCallLines(help string) string {
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		rest := l[len(indent):]
		switch {
		case strings.HasPrefix(rest, "@") && indent != "" && !strings.Contains(rest, "  "):
			lines[i] = indent + callCommand(rest)
		case strings.HasPrefix(rest, "@") && strings.Contains(rest, "; @"):
			// "@n TOOL ? shows …; @n TOOL key=value or {JSON} calls it"
			a, b, _ := strings.Cut(rest, "; @")
			lines[i] = "nerve call " + a + "; nerve call @" + b
		}
	}
	return strings.Join(lines, "\n")
}

// callCommand quotes a Commander line's JSON for a shell.
func callCommand(line string) string {
	if i := strings.IndexByte(line, '{'); i >= 0 {
		return "nerve call " + line[:i] + shellQuote(line[i:])
	}
	return "nerve call " + line
}

// errOutputCut: the call's output was cut by its node; all of it is kept
// in a file (exit code ExitCut), so a script never takes a part for all.
var errOutputCut = errors.New("the output was cut")

// outputCut reports a result whose node cut its output (a bash node past
// its output_cap: structured content truncated, output_file), naming the
// file that holds all of it.
func outputCut(res *mcp.CallToolResult) error {
	m, ok := res.StructuredContent.(map[string]any)
	if !ok || m["truncated"] != true {
		return nil
	}
	total, _ := m["output_bytes"].(float64)
	if f, _ := m["output_file"].(string); f != "" {
		return fmt.Errorf("%w (%.0f bytes in all): all of it is in %s", errOutputCut, total, f)
	}
	return fmt.Errorf("%w (%.0f bytes in all) and could not be kept whole; raise the node's output_cap", errOutputCut, total)
}

// argsFromStdin reads the call's arguments from stdin when the line ends
// with - (dash), or when it gives none for a tool that requires some and
// stdin is not a terminal. JSON ({…}) is the arguments; other text is a
// single-tool node's (or a text tool's) free text. nWords is how many
// words the line had.
func argsFromStdin(env *Env, inv *Invocation, idx commander.Catalog, ln *commander.Line, perr error, dash bool, nWords int) (*commander.Line, error) {
	if !dash {
		// Without -, stdin is read only for a line that names a tool,
		// gives it no arguments although it requires some, and runs with
		// stdin that is not a person's terminal.
		read := perr != nil && ln != nil && ln.Tool != "" && nWords <= 2 && env.Stdin != nil && !isTerminal(env.Stdin)
		if !read {
			if perr != nil {
				return nil, usagef(inv, "%v", perr)
			}
			return ln, nil
		}
	}
	if perr != nil && (ln == nil || ln.Tool == "") {
		return nil, usagef(inv, "%v", perr)
	}
	if ln.Tool == "" {
		return nil, usagef(inv, "`nerve call @%s -` reads the arguments of one tool: name it, e.g. `nerve call @%s TOOL -`", ln.Node, ln.Node)
	}
	if env.Stdin == nil {
		return nil, usagef(inv, "- reads the arguments from stdin, and there is none")
	}
	data, err := io.ReadAll(io.LimitReader(env.Stdin, maxStdinArgs+1))
	if err != nil {
		return nil, fmt.Errorf("reading the arguments from stdin: %w", err)
	}
	if len(data) > maxStdinArgs {
		return nil, usagef(inv, "the arguments on stdin are over %d MB", maxStdinArgs>>20)
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		if perr != nil {
			return nil, usagef(inv, "%v (nothing came on stdin either)", perr)
		}
		return nil, usagef(inv, "- reads the arguments from stdin, and stdin was empty: pipe JSON in, e.g. echo '{\"path\": \"/tmp\"}' | nerve call @%s %s -", ln.Node, ln.Tool)
	}
	qualified := "@" + ln.Node + "." + ln.Tool
	if !strings.HasPrefix(text, "{") {
		t, _ := idx.Tool(ln.Node, ln.Tool)
		param := ""
		if t != nil {
			param = commander.RawParam(t)
		}
		if param == "" {
			return nil, usagef(inv, "@%s %s takes JSON arguments on stdin ({...}), not free text", ln.Node, ln.Tool)
		}
		b, err := json.Marshal(map[string]string{param: strings.TrimRight(string(data), "\n")})
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	ln2, err := commander.Parse(qualified+" "+text, idx, nil)
	if err != nil {
		return nil, usagef(inv, "the arguments on stdin: %v", err)
	}
	return ln2, nil
}

// maxStdinArgs bounds the arguments read from stdin.
const maxStdinArgs = 64 << 20

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// showCallLine reports what happens during a call on stderr: progress and
// log messages, a graph's and an agent's steps (steps, one per call).
// Streamed text is not repeated: the result holds it.
func showCallLine(env *Env, steps *callview.Steps, nodeID string, l api.CallLine) {
	switch l.Kind {
	case node.EventProgress:
		switch {
		case l.Total > 0:
			fmt.Fprintf(env.Stderr, "@%s: %.0f/%.0f %s\n", nodeID, l.Progress, l.Total, l.Message)
		case l.Progress == 0 && l.Message != "":
			// A status without a number (a task's: "task ID working").
			fmt.Fprintf(env.Stderr, "@%s: %s\n", nodeID, l.Message)
		default:
			fmt.Fprintf(env.Stderr, "@%s: %v %s\n", nodeID, l.Progress, l.Message)
		}
	case node.EventLog:
		fmt.Fprintf(env.Stderr, "@%s %s: %s\n", nodeID, l.Level, strings.TrimSpace(string(l.Data)))
	case node.EventStep:
		if l.Step == "graph" {
			fmt.Fprintf(env.Stderr, "@%s %s\n", nodeID, graphStepLine(l.Data))
		} else if line := steps.Line(l.Step, l.Data); line != "" {
			fmt.Fprintf(env.Stderr, "@%s %s\n", nodeID, line)
		}
	}
}

// printResult prints a result for people: its text on stdout (stderr for
// an error result); binary content is saved to files whose paths are shown.
func printResult(env *Env, res *mcp.CallToolResult) error {
	r := commander.RenderResult(res, commander.RenderOptions{MaxBytes: -1, HideStructuredBesideText: true})
	if len(r.Attachments) > 0 {
		dir, err := os.MkdirTemp("", "nerve-call-")
		if err != nil {
			return fmt.Errorf("saving the result's attachments: %w", err)
		}
		var saved []string
		for _, a := range r.Attachments {
			p := filepath.Join(dir, a.Name)
			if err := os.WriteFile(p, a.Data, 0o600); err != nil {
				return fmt.Errorf("saving the result's attachments: %w", err)
			}
			saved = append(saved, p)
		}
		r.Fill(saved, "")
	}
	w := env.Stdout
	if r.IsError {
		w = env.Stderr
	}
	_, err := fmt.Fprint(w, r.Text)
	return err
}
