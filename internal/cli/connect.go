package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/logging"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/internal/tokenstore"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// startTimeout bounds waiting for a daemon we started to answer.
const startTimeout = 10 * time.Second

// firstNodes are the nodes a default session starts with the first time:
// always in embedded mode; for the daemon only when it has no saved state
// for it (a person who removes @bash does not get it back).
var firstNodes = []node.Spec{{ID: "bash", Kind: "bash"}}

// Connect returns the client commands use: env.Client if set; an embedded
// daemon in memory with --embedded; otherwise the daemon on the socket,
// started first when it does not answer.
func (e *Env) Connect(ctx context.Context) (*client.Client, error) {
	if e.Client != nil {
		return e.Client, nil
	}
	if e.conn == nil {
		e.conn = &connState{}
	}
	if e.conn.client != nil {
		return e.conn.client, nil
	}
	var c *client.Client
	var err error
	if e.Embedded {
		if _, err := e.remote(); err != nil {
			return nil, err // -H with --embedded
		}
		c, err = e.connectEmbedded(ctx)
	} else {
		c, _, err = e.connectDaemon(ctx, true)
	}
	if err != nil {
		return nil, err
	}
	e.conn.client = c
	return c, nil
}

func (e *Env) newClient(socket string, dial func(context.Context) (net.Conn, error), revive func(context.Context) error) *client.Client {
	return client.New(e.clientOptions(socket, dial, revive))
}

func (e *Env) clientOptions(socket string, dial func(context.Context) (net.Conn, error), revive func(context.Context) error) client.Options {
	opts := client.Options{
		Socket:  socket,
		Caller:  cmp.Or(e.Caller, node.CallerCLI),
		Version: Version(),
		OnVersionMismatch: func(v string) {
			fmt.Fprintf(e.Stderr, "nerve: warning: the daemon is version %s and this nerve is %s; restart it with `nerve daemon stop` (the next command starts this version)\n", v, Version())
		},
		Revive: revive,
		Header: telemetry.InjectHeader, // a call's trace goes on in the daemon (trace.go)
	}
	if v := e.getenv(node.FromCallEnv); v != "" {
		// Run inside a node's call (`nerve call` in a bash command): the
		// node refuses at once a call to itself that would wait for the
		// call it runs in.
		opts.CallMeta = map[string]any{node.FromCallMetaKey: v}
	}
	if dial != nil {
		opts.Dial = dial
	}
	if socket != "" {
		// The daemon may have been started by someone else, earlier: the
		// nodes this client adds or restarts see its environment.
		opts.Environ = os.Environ
	}
	return opts
}

func (e *Env) connectEmbedded(ctx context.Context) (*client.Client, error) {
	p, err := e.paths()
	if err != nil {
		return nil, err
	}
	log, closeLog, err := logging.Open(p.Log, e.getenv("NERVE_LOG_LEVEL"))
	if err != nil {
		return nil, err
	}
	tokens, err := tokenstore.Open(p.State, e.getenv("NERVE_TOKENS"))
	if err != nil {
		closeLog()
		return nil, err
	}
	emb, err := daemon.StartEmbedded(ctx, &daemon.Options{
		Registry:     all.Registry(tokens), // sign-ins of `nerve node auth`
		Logger:       log.Named("embedded"),
		Version:      Version(),
		DefaultNodes: firstNodes,
		// ${keychain:NAME} of nodes: secret.go.
		Secret: secretLookup(tokenstore.NewSecrets(tokens, p.State), log),
	})
	if err != nil {
		closeLog()
		return nil, err
	}
	e.conn.embedded = emb
	e.conn.closeLog = closeLog
	return e.newClient("", emb.Dial, nil), nil
}

// connectDaemon returns a client of the daemon on the socket. With start,
// a daemon that does not answer is started (detached) and waited for, and
// the client starts it again if it stops between two requests of this
// command (a `nerve daemon stop` racing it); started says whether this
// call started it.
func (e *Env) connectDaemon(ctx context.Context, start bool) (c *client.Client, started bool, err error) {
	r, err := e.remote()
	if err != nil {
		return nil, false, err
	}
	if r != nil {
		return e.connectRemote(ctx, r, start) // context.go
	}
	return e.connectLocal(ctx, start)
}

// connectLocal is connectDaemon for this machine's daemon, whatever -H,
// NERVE_HOST or the context say (`nerve daemon dial-stdio` serves it).
func (e *Env) connectLocal(ctx context.Context, start bool) (c *client.Client, started bool, err error) {
	p, err := e.paths()
	if err != nil {
		return nil, false, err
	}
	probe := e.newClient(p.Socket, nil, nil)
	_, err = probe.Version(ctx)
	if !start {
		return probe, false, err
	}
	if err != nil {
		if !errors.Is(err, client.ErrDaemonUnavailable) {
			return probe, false, err
		}
		if err := e.startDaemon(ctx, p, probe); err != nil {
			return nil, false, err
		}
		started = true
	}
	probe.Close()
	return e.newClient(p.Socket, nil, e.reviver(p, probe)), started, nil
}

// reviver returns the client's Revive: start the daemon again and wait
// until it answers on probe.
func (e *Env) reviver(p paths.Paths, probe *client.Client) func(context.Context) error {
	conn := e.conn
	return func(ctx context.Context) error {
		if err := e.startDaemon(ctx, p, probe); err != nil {
			return err
		}
		if conn != nil {
			if f := conn.onRevived.Load(); f != nil {
				(*f)()
			}
		}
		return nil
	}
}

// callSession is env.session for a one-shot `nerve call`, without asking
// the daemon first whether it answers: the call's own request is the
// probe (every answer carries the daemon's version, which the client
// checks), and a daemon that is not running is started by the client's
// Revive when that request cannot connect. A call is then one request,
// made by a client with no pool and no goroutines (client.Options.OneShot).
func (e *Env) callSession(ctx context.Context) (*client.Session, error) {
	if e.Client != nil || e.Embedded || (e.conn != nil && e.conn.client != nil) {
		return e.session(ctx)
	}
	if e.conn == nil {
		e.conn = &connState{}
	}
	r, err := e.remote()
	if err != nil {
		return nil, err
	}
	if r != nil {
		// One ssh process for the call, started by its own request; the
		// host starts its daemon if needed.
		opts := e.remoteOptions(r)
		opts.OneShot = true
		c := client.New(opts)
		e.conn.client = c
		return c.Session(e.SessionName()), nil
	}
	p, err := e.paths()
	if err != nil {
		return nil, err
	}
	probe := e.clientOptions(p.Socket, nil, nil)
	probe.OneShot = true
	opts := e.clientOptions(p.Socket, nil, e.reviver(p, client.New(probe)))
	opts.OneShot = true
	c := client.New(opts)
	e.conn.client = c
	return c.Session(e.SessionName()), nil
}

// selfExe is this program, which starts the daemon and which MCP client
// configs name.
func selfExe() (string, error) { return os.Executable() }

// startDaemon starts the daemon (detached) and waits until it answers on
// probe. Two commands may do it at once: the daemon's lock lets one run.
func (e *Env) startDaemon(ctx context.Context, p paths.Paths, probe *client.Client) error {
	exe, err := selfExe()
	if err != nil {
		return fmt.Errorf("finding this program to start the daemon: %w; start it yourself with `nerve daemon start --foreground`", err)
	}
	spawnEnv := os.Environ()
	if e.conn != nil && e.conn.loginPath {
		spawnEnv = append(spawnEnv, daemon.LoginPathVar+"=1")
	}
	proc, err := daemon.Spawn(exe, p, spawnEnv)
	if err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _, _ = proc.Wait(); close(exited) }()
	if err := waitReady(ctx, probe, exited); err != nil {
		return fmt.Errorf("%w; see the log: %s%s", err, p.Log, logTail(p.Log, 5))
	}
	return nil
}

// waitReady polls the socket until the daemon answers. A daemon that exits
// at once may have lost the race to another one starting at the same
// moment, so its exit only shortens the wait.
func waitReady(ctx context.Context, c *client.Client, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	delay := 2 * time.Millisecond
	var exitDeadline <-chan time.Time
	for {
		_, err := c.Version(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, client.ErrDaemonUnavailable) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the daemon did not answer within %v: %w", startTimeout, err)
		case <-exited:
			exited = nil
			exitDeadline = time.After(time.Second)
		case <-exitDeadline:
			return errors.New("the daemon exited as it started")
		case <-time.After(delay):
			delay = min(delay*2, 50*time.Millisecond)
		}
	}
}

// logTail returns the last n lines of the log file, indented, for an error.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}
