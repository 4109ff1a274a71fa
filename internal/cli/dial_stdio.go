package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/nerve-dev/nerve/pkg/client"
)

// dialStdioCmd is `nerve daemon dial-stdio`, what `nerve -H ssh://HOST`
// runs on HOST through ssh (docker's `docker system dial-stdio`): it
// starts this user's daemon when it is not running, as every command
// does, then copies its stdin to the daemon's socket and the socket to
// its stdout until either ends. It always serves this machine's daemon:
// -H, NERVE_HOST and the current context are not read, so a host whose
// own context points elsewhere never relays further.
func dialStdioCmd() *Command {
	return &Command{
		Name:    "dial-stdio",
		Summary: "connect stdin and stdout to this machine's daemon (what `nerve -H ssh://HOST` runs on HOST)",
		Usage:   "daemon dial-stdio [--no-start]",
		Help: `Starts the daemon if it is not running, then copies bytes between stdin
and stdout and the daemon's socket until either side ends. nerve -H
ssh://HOST runs it on HOST through ssh; nothing else needs it.`,
		Flags:  []*Flag{{Name: "no-start", Usage: "connect only to a daemon that runs (what watches a daemon in the background uses)"}},
		Hidden: true,
		Local:  true,
		Run:    runDialStdio,
	}
}

func runDialStdio(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve daemon dial-stdio` takes no arguments")
	}
	if env.conn == nil {
		env.conn = &connState{}
	}
	// A non-interactive ssh session has a bare PATH: a daemon started from
	// here takes the login shell's, so its nodes find npx, uvx, node.
	env.conn.loginPath = true
	start := !inv.Bool("no-start")
	c, _, err := env.connectLocal(ctx, start)
	if err != nil {
		if !start && errors.Is(err, client.ErrDaemonUnavailable) {
			return errors.New("no daemon is running (and --no-start starts none)")
		}
		return err
	}
	c.Close()
	p, err := env.paths()
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", p.Socket)
	if err != nil {
		return fmt.Errorf("connecting to the daemon's socket %s: %w", p.Socket, err)
	}
	defer conn.Close()
	in, out := env.Stdin, env.Stdout
	if in == nil {
		in = os.Stdin
	}
	return relay(ctx, conn, in, out) // mcp_serve.go
}
