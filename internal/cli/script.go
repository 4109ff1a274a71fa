package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
)

// maxScript bounds a script file read by `nerve script`.
const maxScript = 1 << 20

func scriptCmd() *Command {
	return &Command{
		Name:    "script",
		Summary: "run a Starlark script whose functions are the session's tools",
		Usage:   "script [--tools GLOBS] [--check] FILE|-",
		Help: `Runs FILE (or stdin, with -) in the daemon against the session: every
tool a script may see is a function (fs.read_text_file(path="a.txt")),
and each call is the session's, shown in nerve log under the script's run.
The answer is the variable result, or the value of the script's last line
(docs/code-mode.md). What the script prints goes to stdout before it;
--json prints the whole answer (result, printed, calls, run, error).
Exit codes: 0 done, 1 could not run it, 2 bad input, 3 the script failed
or was stopped by a limit (the error, at its line:column, on stderr).

Examples:
  nerve script summary.star
  echo 'result = sh.bash(command="uname -a")' | nerve script -
  nerve script --tools 'fs.*' summary.star   only fs's tools
  nerve script --check summary.star          compile it, run nothing
  nerve script --list                        what a script can call`,
		Flags: []*Flag{
			{Name: "tools", Value: "GLOBS", Usage: "only these tools, as `nerve mcp serve --tools` (fs.*,!fs.write_*)"},
			{Name: "check", Usage: "compile the script against the visible tools without running it"},
			{Name: "list", Usage: "print the tools a script can call, as a model sees them"},
		},
		Run: runScript,
	}
}

func runScript(ctx context.Context, env *Env, inv *Invocation) error {
	if inv.Bool("list") {
		if len(inv.Args) > 0 {
			return usagef(inv, "--list takes no FILE")
		}
		s, err := env.session(ctx)
		if err != nil {
			return err
		}
		raw, err := s.ScriptTool(ctx, inv.Flag("tools"))
		if err != nil {
			return err
		}
		var t mcp.Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("reading the run_script tool: %w", err)
		}
		if env.JSON {
			return printJSON(env, &t)
		}
		_, err = fmt.Fprintln(env.Stdout, t.Description)
		return err
	}
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve script` runs one FILE, or - for stdin")
	}
	req := api.ScriptRequest{Tools: inv.Flag("tools"), Check: inv.Bool("check")}
	var data []byte
	var err error
	if name := inv.Args[0]; name == "-" {
		req.Filename = "stdin"
		data, err = io.ReadAll(io.LimitReader(env.Stdin, maxScript+1))
	} else {
		req.Filename = filepath.Base(name)
		var f *os.File
		if f, err = os.Open(name); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxScript+1))
			f.Close()
		}
	}
	if err != nil {
		return usagef(inv, "reading the script: %v", err)
	}
	if len(data) > maxScript {
		return usagef(inv, "the script is over %d bytes", maxScript)
	}
	req.Script = string(data)
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	// SIGINT and SIGTERM stop the script in the daemon (its calls are told).
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	raw, err := s.Script(sctx, req)
	if err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("interrupted: the script was stopped")
		}
		return err
	}
	res, err := mcpclient.Result(raw)
	if err != nil {
		return err
	}
	return printScript(env, res, req.Filename)
}

// printScript prints a script's answer: with --json its structured
// content; else what it printed, then its result (a string as it is,
// anything else as indented JSON), and the error on stderr.
func printScript(env *Env, res *mcp.CallToolResult, filename string) error {
	var sc struct {
		Result  json.RawMessage `json:"result"`
		Printed string          `json:"printed"`
		Error   *struct {
			Message      string `json:"message"`
			Line, Column int
		} `json:"error"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(raw, &sc)
	}
	if err != nil || res.StructuredContent == nil {
		// Not a script's answer (a check): its text.
		return printCallResult(env, res)
	}
	if env.JSON {
		if err := printJSON(env, res.StructuredContent); err != nil {
			return err
		}
	} else {
		fmt.Fprint(env.Stdout, sc.Printed)
		if sc.Printed != "" && !strings.HasSuffix(sc.Printed, "\n") {
			fmt.Fprintln(env.Stdout)
		}
		var str string
		switch {
		case len(sc.Result) == 0 || string(sc.Result) == "null":
		case json.Unmarshal(sc.Result, &str) == nil:
			fmt.Fprintln(env.Stdout, str)
		default:
			var v any
			_ = json.Unmarshal(sc.Result, &v)
			if err := printJSON(env, v); err != nil {
				return err
			}
		}
	}
	if res.IsError {
		if e := sc.Error; e != nil && e.Line > 0 {
			fmt.Fprintf(env.Stderr, "nerve: %s:%d:%d: %s\n", filename, e.Line, e.Column, e.Message)
		} else if e != nil {
			fmt.Fprintf(env.Stderr, "nerve: %s: %s\n", filename, e.Message)
		}
		return errToolFailed
	}
	return nil
}
