package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/logging"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/tokenstore"
	"github.com/nerve-dev/nerve/pkg/client"
)

func daemonCmd() *Command {
	return &Command{
		Name:    "daemon",
		Summary: "start, stop and inspect the per-user daemon",
		Usage:   "daemon COMMAND",
		Help: `Every command starts the daemon when it is not running; these commands
manage it by hand. Its log is in the state folder (see ` + "`nerve daemon status`" + `).`,
		Sub: []*Command{
			{
				Name:    "start",
				Summary: "start the daemon (detached unless --foreground)",
				Usage:   "daemon start [--foreground] [--listen ADDR]",
				Flags: []*Flag{
					{Name: "foreground", Usage: "run in this process until SIGTERM or SIGINT (for systemd, launchd, debugging)"},
					{Name: "listen", Value: "ADDR", Usage: "serve the session MCP endpoint at ADDR, a loopback address such as 127.0.0.1:8765 (default: a free port; also $NERVE_MCP_LISTEN)"},
				},
				Local: true,
				Run:   runDaemonStart,
			},
			{Name: "stop", Summary: "stop every node and the daemon", Usage: "daemon stop", Local: true, Run: runDaemonStop},
			{Name: "status", Summary: "say whether the daemon runs, its version, pid and sessions", Usage: "daemon status", Local: true, Run: runDaemonStatus},
			dialStdioCmd(), // dial_stdio.go
		},
	}
}

func runDaemonStart(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve daemon start` takes no arguments")
	}
	listen := inv.Flag("listen")
	r, err := env.remote()
	if err != nil {
		return err
	}
	if r != nil && (inv.Bool("foreground") || listen != "") {
		return usagef(inv, "--foreground and --listen start a daemon in this process, on this machine: run `nerve daemon start` on %s itself for them", r.Host)
	}
	if inv.Bool("foreground") {
		return runForeground(ctx, env, listen)
	}
	if listen != "" {
		// The detached daemon inherits the environment.
		os.Setenv(daemon.MCPListenEnv, listen)
	}
	c, started, err := env.connectDaemon(ctx, true)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, v)
	}
	switch {
	case r != nil:
		// The ssh connection started it there, or found it running.
		fmt.Fprintf(env.Stdout, "daemon on %s running (pid %d)\n", r.Host, v.PID)
	case started:
		fmt.Fprintf(env.Stdout, "daemon started (pid %d)\n", v.PID)
	default:
		fmt.Fprintf(env.Stdout, "daemon already running (pid %d)\n", v.PID)
		if listen != "" {
			fmt.Fprintf(env.Stderr, "nerve: --listen applies when the daemon starts; run `nerve daemon stop` first to serve the MCP endpoint at %s\n", listen)
		}
	}
	return nil
}

// runForeground is the daemon process.
func runForeground(ctx context.Context, env *Env, listen string) error {
	p, err := env.paths()
	if err != nil {
		return err
	}
	if err := p.Ensure(); err != nil {
		return err
	}
	log, closeLog, err := logging.Open(p.Log, env.getenv("NERVE_LOG_LEVEL"))
	if err != nil {
		return err
	}
	defer closeLog()
	// OAuth sign-ins of mcp nodes (`nerve node auth`) outlive the daemon.
	tokens, err := tokenstore.Open(p.State, env.getenv("NERVE_TOKENS"))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer startTracing(ctx, p, env.getenv, log.Named("telemetry"))() // trace.go
	err = daemon.Run(ctx, daemon.Options{
		Registry: all.Registry(tokens),
		Logger:   log.Named("daemon"),
		Version:  Version(),
		Paths:    p,
		// Config files of claude nodes whose daemon was killed.
		Cleanups:     all.Cleanups(),
		MCPListen:    listen,
		DefaultNodes: firstNodes,
		UI:           uiHooks(tokens), // ui.go
		// ${keychain:NAME} of nodes: secret.go.
		Secret: secretLookup(tokenstore.NewSecrets(tokens, p.State), log),
	}, func() {
		fmt.Fprintf(env.Stderr, "nerve daemon %s listening on %s (pid %d)\n", Version(), p.Socket, os.Getpid())
	})
	if errors.Is(err, daemon.ErrRunning) {
		return err
	}
	return err
}

func runDaemonStop(ctx context.Context, env *Env, inv *Invocation) error {
	c, _, err := env.connectDaemon(ctx, false)
	var se *client.SSHError
	if errors.Is(err, client.ErrDaemonUnavailable) && !errors.As(err, &se) {
		fmt.Fprintln(env.Stderr, "daemon is not running")
		return nil
	}
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return err
	}
	if err := c.Shutdown(ctx); err != nil {
		return err
	}
	if r, _ := env.remote(); r != nil {
		// Its exit is not awaited from here: the next command's ssh
		// connection waits for the old daemon there before starting anew.
		if !env.JSON {
			fmt.Fprintf(env.Stdout, "daemon on %s stopped (pid %d)\n", r.Host, v.PID)
		}
		return nil
	}
	// Wait until the process has exited (its lock is free), so a
	// following command starts a new daemon at once.
	p, err := env.paths()
	if err != nil {
		return err
	}
	c.Close()
	if err := daemon.WaitExited(ctx, p, v.PID, daemon.ExitTimeout); err != nil {
		return fmt.Errorf("daemon (pid %d) did not exit: %w (end it with `kill %d`)", v.PID, err, v.PID)
	}
	if !env.JSON {
		fmt.Fprintf(env.Stdout, "daemon stopped (pid %d)\n", v.PID)
	}
	return nil
}

func runDaemonStatus(ctx context.Context, env *Env, inv *Invocation) error {
	r, err := env.remote()
	if err != nil {
		return err
	}
	var p paths.Paths
	if r == nil {
		if p, err = env.paths(); err != nil {
			return err
		}
	}
	c, _, err := env.connectDaemon(ctx, false)
	if err != nil {
		if errors.Is(err, client.ErrDaemonUnavailable) && r == nil {
			if env.JSON {
				_ = printJSON(env, map[string]any{"running": false, "socket": p.Socket})
			}
			return fmt.Errorf("daemon is not running (socket %s): any command starts it, or `nerve daemon start`", p.Socket)
		}
		if r != nil && env.JSON {
			_ = printJSON(env, map[string]any{"running": false, "host": r.String()})
		}
		return err
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return err
	}
	ss, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	if env.JSON {
		st := map[string]any{"running": true, "daemon": v, "sessions": ss}
		if r != nil {
			st["host"] = r.String()
		} else {
			st["log"] = p.Log
		}
		return printJSON(env, st)
	}
	where := "daemon"
	if r != nil {
		where = "daemon on " + r.Host
	}
	fmt.Fprintf(env.Stdout, "%s running: pid %d, version %s, up %s\n", where, v.PID, v.Version, time.Since(v.Started).Round(time.Second))
	if r != nil {
		// That machine's files: its log is read there (`nerve log`).
		fmt.Fprintf(env.Stdout, "host:     %s\nsocket:   %s\nstate:    %s\n", r, v.Socket, v.StateDir)
	} else {
		fmt.Fprintf(env.Stdout, "socket:   %s\nstate:    %s\nlog:      %s\ncall log: %s\n", v.Socket, v.StateDir, p.Log, p.CallLog)
	}
	var names []string
	for _, s := range ss {
		names = append(names, fmt.Sprintf("%s (%d nodes)", s.Name, s.Nodes))
	}
	fmt.Fprintf(env.Stdout, "sessions: %s\n", strings.Join(names, ", "))
	for _, n := range v.Notices {
		fmt.Fprintf(env.Stdout, "notice:   %s\n", n)
	}
	return nil
}
