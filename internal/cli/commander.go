package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chzyer/readline"

	"github.com/nerve-dev/nerve/internal/callview"
	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/repl"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// RunREPL runs the Commander (internal/repl) on env's session until the
// person leaves: the root command with no arguments.
func RunREPL(ctx context.Context, env *Env) error {
	// What the REPL does in the background never starts a daemon someone
	// stopped (repl.Run); a line the person runs does.
	ctx = client.WithRevive(ctx, false)
	env.oneCommand = false // the REPL runs many commands in this process
	if env.Caller == "" {
		env.Caller = node.CallerREPL // the call log says the calls came from here
	}
	c, err := env.Connect(ctx)
	if err != nil {
		return err
	}
	p, err := env.paths()
	if err != nil {
		return err
	}
	kinds, err := c.Kinds(ctx)
	if err != nil {
		return err
	}
	color := colorWanted(env)
	opts := &repl.Options{
		Client:       c,
		Session:      env.SessionName(),
		Stdin:        env.Stdin,
		Stdout:       env.Stdout,
		Stderr:       env.Stderr,
		Color:        color,
		HistoryFile:  p.History,
		OutputDir:    filepath.Join(p.State, "outputs"),
		SamplingNode: env.getenv(samplingNodeEnv),
		CommandSpecs: commandSpecs(Tree(), kinds),
		Summaries:    commandSummaries(Tree()),
		Exec:         replExec(env, c, &color),
		OpenURL:      func(u string) (string, error) { return openBrowser(env, u) },
	}
	if !env.Embedded && env.Client == nil {
		opts.Restart = func(ctx context.Context) (bool, error) {
			c, started, err := env.connectDaemon(ctx, true)
			if err != nil {
				return false, err
			}
			c.Close()
			return started, nil
		}
	}
	if env.conn != nil {
		opts.OnRevive = func(revived func()) { env.conn.onRevived.Store(&revived) }
	}
	return repl.Run(ctx, opts)
}

// replExec runs a `:`-command of the Commander through the command tree,
// on the Commander's client and session, its messages in the Commander's
// syntax.
func replExec(env *Env, c *client.Client, color *bool) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
		sub := *env
		sub.Stdout, sub.Stderr, sub.Stdin = stdout, syntaxWriter{stderr, commander.REPLSyntax}, nil
		sub.Client = c
		sub.Color = color
		sub.Session = env.SessionName()
		err := Exec(ctx, &sub, argv)
		if errors.Is(err, errToolFailed) {
			return nil // the tool's own output already said it
		}
		var ue *UsageError
		if errors.As(err, &ue) && ue.Cmd != nil && !namesFix(commander.ShellSyntax(ue.Msg)) {
			return fmt.Errorf("%s (usage: :%s)", ue.Msg, usageOf(ue.Cmd, ue.Path))
		}
		return err
	}
}

// commandSummaries is :help's list of commands.
func commandSummaries(root *Command) []repl.Summary {
	var out []repl.Summary
	for _, c := range root.Sub {
		if !c.Hidden {
			out = append(out, repl.Summary{Name: c.Name, Summary: c.Summary})
		}
	}
	return out
}

// commandSpecs describes the command tree for :command completion.
func commandSpecs(root *Command, kinds []string) []commander.CommandSpec {
	var out []commander.CommandSpec
	for _, c := range root.Sub {
		if c.Hidden {
			continue
		}
		out = append(out, commandSpec(c, kinds))
	}
	out = append(out, commander.CommandSpec{Name: "quit"}, commander.CommandSpec{Name: "help", Args: []commander.ArgSpec{{Name: "COMMAND", Values: commandNames(root)}}})
	return out
}

func commandSpec(c *Command, kinds []string) commander.CommandSpec {
	cs := commander.CommandSpec{Name: c.Name}
	for _, s := range c.Sub {
		if !s.Hidden {
			cs.Subcommands = append(cs.Subcommands, commandSpec(s, kinds))
		}
	}
	for _, f := range c.Flags {
		cs.Flags = append(cs.Flags, commander.FlagSpec{Name: "--" + f.Name, TakesValue: f.Value != "", Values: f.Values})
	}
	switch c.Complete {
	case "node":
		cs.Args = []commander.ArgSpec{{Name: "NODE", Node: true}}
	case "kind":
		cs.Args = []commander.ArgSpec{{Name: "KIND", Values: kinds}}
		if c.Specialize != nil {
			// `:node add llm --<Tab>` offers the llm kind's flags: each kind
			// is a subcommand whose flags are that kind's.
			for _, k := range kinds {
				if sc := c.Specialize([]string{k}); sc != nil {
					ks := commandSpec(sc, kinds)
					ks.Name, ks.Args = k, []commander.ArgSpec{{Name: "NAME"}}
					cs.Subcommands = append(cs.Subcommands, ks)
				}
			}
		}
	}
	return cs
}

func commandNames(root *Command) []string {
	var out []string
	for _, c := range root.Sub {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

// samplingNodeEnv names the llm node that may answer sampling requests
// (issue 8 item 5); --sampling-node sets it for one REPL.
const samplingNodeEnv = "NERVE_SAMPLING_NODE"

func init() {
	// A global flag so that `nerve -s work --sampling-node gpt` reads as
	// the other global flags do; only the REPL uses it.
	globalFlags = append(globalFlags, &Flag{Name: "sampling-node", Value: "NODE",
		Usage: "llm node that may answer MCP servers' sampling requests in the Commander, after you consent (default: $" + samplingNodeEnv + ")"})
}

// replEnv returns env for the REPL with inv's --sampling-node applied: it
// overrides $NERVE_SAMPLING_NODE.
func replEnv(env *Env, inv *Invocation) *Env {
	v := inv.Flag("sampling-node")
	if v == "" {
		return env
	}
	e := *env
	get := env.getenv
	e.Getenv = func(k string) string {
		if k == samplingNodeEnv {
			return v
		}
		return get(k)
	}
	return &e
}

// colorWanted reports whether to colour output: not with NO_COLOR, not when
// stdout is not a terminal.
func colorWanted(env *Env) bool {
	if env.Color != nil {
		return *env.Color
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok || env.getenv("NO_COLOR") != "" {
		return false
	}
	if env.getenv("TERM") == "dumb" {
		return false
	}
	f, ok := env.Stdout.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// syntaxWriter rewrites what is written to w with fix; every write is one
// or more whole messages.
type syntaxWriter struct {
	w   io.Writer
	fix func(string) string
}

func (s syntaxWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.fix(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Shared with the Commander (internal/commander, internal/callview), under
// the names the command files use.
var (
	lineNode      = commander.LineNode
	graphStepLine = callview.GraphStepLine
	roundDuration = callview.Duration
	firstLine     = callview.FirstLine
)
