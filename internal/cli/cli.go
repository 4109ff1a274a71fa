// Package cli is nerve's command line: one command tree (Tree) run by the
// `nerve` binary (Run) and by the REPL's `:`-commands (Exec), shell
// completion, and starting the daemon on demand. The REPL itself is
// internal/repl, which RunREPL starts with the command tree and a client. It
// reaches sessions only through pkg/client. Only cmd/nerve imports it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/pkg/client"
)

// Exit codes.
const (
	ExitOK        = 0 // done
	ExitFailed    = 1 // could not do it: daemon, node or connection failed
	ExitUsage     = 2 // usage or bad input
	ExitToolError = 3 // the tool ran and reported an error (isError)
	ExitCut       = 4 // the tool ran, but its output was cut: all of it is in a file
)

// Env is what a command runs with. The REPL makes one with its own writers
// and an already-connected Client; Run makes one from the process.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	// Session is the session commands act on.
	Session string
	// JSON asks for JSON answers.
	JSON bool
	// Color asks for coloured tables; nil decides by the terminal and
	// NO_COLOR (the REPL sets it, its writers are not the terminal's).
	Color *bool
	// Embedded runs an in-process daemon instead of using the socket.
	Embedded bool
	// Host is -H: the daemon of another machine, ssh://[user@]host[:port];
	// "" leaves it to NERVE_HOST, then the current context (context.go).
	Host string
	// Client, if set, is used as is; otherwise Connect makes one (starting
	// the daemon when needed, or an embedded one).
	Client *client.Client
	// Paths are nerve's files; zero means paths.FromEnv of the environment.
	Paths paths.Paths
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Caller names the calls this Env makes in the call log: "cli" when
	// empty, "repl" in the Commander.
	Caller string

	// oneCommand: the process runs this one command and exits (Run).
	oneCommand bool

	// conn is shared by the copies apply makes, so a connection made for
	// one command is closed once by Close.
	conn *connState
}

type connState struct {
	// loginPath: a daemon this command starts takes the login shell's
	// PATH (nerve mcp serve, started by an app with a minimal PATH).
	loginPath bool
	client    *client.Client
	embedded  *daemon.Embedded
	closeLog  func() error
	// onRevived, if set, is told when a request started the daemon again
	// (it had stopped between two requests): the REPL says so.
	onRevived atomic.Pointer[func()]
}

// NewEnv returns an Env for the process: os.Stdout, os.Stderr, os.Stdin,
// the session from NERVE_SESSION.
func NewEnv() *Env {
	return &Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv}
}

func (e *Env) getenv(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

// SessionName returns the session to use: Session, else NERVE_SESSION,
// else "default".
func (e *Env) SessionName() string {
	if e.Session != "" {
		return e.Session
	}
	if s := e.getenv("NERVE_SESSION"); s != "" {
		return s
	}
	return daemon.DefaultSession
}

// apply returns a copy of e with the global flags of inv applied.
func (e *Env) apply(inv *Invocation) *Env {
	c := *e
	if e.conn == nil {
		e.conn = &connState{}
	}
	c.conn = e.conn
	if s := inv.Flag("session"); s != "" {
		c.Session = s
	}
	if inv.Bool("json") {
		c.JSON = true
	}
	if inv.Bool("embedded") {
		c.Embedded = true
	}
	if h := inv.Flag("host"); h != "" {
		c.Host = h
	}
	return &c
}

func (e *Env) paths() (paths.Paths, error) {
	if e.Paths.State != "" {
		return e.Paths, nil
	}
	p, err := paths.FromEnv(e.getenv)
	if err != nil {
		return p, err
	}
	e.Paths = p
	return p, nil
}

// Close ends what Connect started (an embedded daemon, idle connections).
func (e *Env) Close(ctx context.Context) error {
	if e.conn == nil {
		return nil
	}
	var errs []error
	if e.conn.client != nil && e.conn.client != e.Client {
		errs = append(errs, e.conn.client.Close())
	}
	if e.conn.embedded != nil {
		errs = append(errs, e.conn.embedded.Close(ctx))
	}
	if e.conn.closeLog != nil {
		errs = append(errs, e.conn.closeLog())
	}
	e.conn = nil
	return errors.Join(errs...)
}

// Run runs the nerve command line args (without the program name) and
// returns the process's exit code; the process exits then (main), so what
// only an exit undoes may be left to it (a call's signal catching).
func Run(ctx context.Context, args []string) int {
	env := NewEnv()
	env.oneCommand = true
	defer env.Close(context.WithoutCancel(ctx))
	return ExitCode(env.Stderr, runArgs(ctx, env, args))
}

func runArgs(ctx context.Context, env *Env, args []string) error {
	return Exec(ctx, env, args)
}

// ExitCode maps err to an exit code, printing it (and, for a usage error,
// the command's usage) to stderr.
func ExitCode(stderr io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	code := Code(err)
	if errors.Is(err, errToolFailed) {
		return code // the tool's own output already said it
	}
	msg := commander.ShellSyntax(err.Error())
	fix := namesFix(msg)
	if !strings.HasPrefix(msg, "nerve") {
		msg = "nerve: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var ue *UsageError
	if errors.As(err, &ue) && ue.Cmd != nil && !fix {
		fmt.Fprintf(stderr, "usage: nerve %s (see `nerve %s --help`)\n", usageOf(ue.Cmd, ue.Path), strings.Join(ue.Path, " "))
	}
	return code
}

// namesFix reports whether a usage error's message (in the shell's
// syntax) already says what to type: a did-you-mean, an example, or a
// command in backquotes after its start ("… — see `nerve call @fs ?`").
// The generic usage line after it would only bury it (issue 27).
func namesFix(msg string) bool {
	return strings.Contains(msg, "did you mean") || strings.Contains(msg, "e.g.") ||
		len(msg) > 1 && strings.Contains(msg[1:], "`nerve ")
}

func usageOf(c *Command, path []string) string {
	if c.Usage != "" {
		return c.Usage
	}
	return strings.TrimSpace(strings.Join(path, " ") + " COMMAND")
}

// Code returns the exit code for err without printing anything.
func Code(err error) int {
	var ue *UsageError
	var ie *interruptedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ie):
		return 128 + int(ie.sig)
	case errors.Is(err, errToolFailed):
		return ExitToolError
	case errors.Is(err, errOutputCut):
		return ExitCut
	case errors.As(err, &ue),
		errors.Is(err, client.ErrBadArgs),
		errors.Is(err, client.ErrBadRequest),
		errors.Is(err, client.ErrUnknownTool),
		errors.Is(err, client.ErrNodeNotFound),
		errors.Is(err, client.ErrSessionNotFound),
		errors.Is(err, client.ErrExists),
		errors.Is(err, client.ErrUnsupported):
		return ExitUsage
	default:
		return ExitFailed
	}
}
