package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"mvdan.cc/sh/v3/shell"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/pkg/client"
)

// Which daemon commands reach: this machine's (the context "default"), or
// one on another machine through ssh, named by -H, else NERVE_HOST, else
// the current context (`nerve context use`). docs/remote.md.

// defaultContext is the name of this machine's daemon.
const defaultContext = "default"

func contextCmd() *Command {
	return &Command{
		Name:    "context",
		Summary: "name daemons on other machines (reached through ssh) and choose the one commands use",
		Usage:   "context COMMAND",
		Help: `A context names a daemon on another machine, reached through the system's
ssh: every command, the Commander and ` + "`nerve mcp serve`" + ` then work on that
machine's daemon as on this one's. "default" is the daemon of this machine.
-H ssh://… (one command) and NERVE_HOST override the current context.

Examples:
  nerve context create build --host ssh://me@build.example.com
  nerve context use build
  nerve node ls                  # the nodes on build.example.com
  nerve context use default      # this machine again`,
		Sub: []*Command{
			{Name: "create", Summary: "name a daemon on another machine", Usage: "context create NAME --host ssh://[USER@]HOST[:PORT]",
				Flags: []*Flag{{Name: "host", Value: "ssh://[USER@]HOST[:PORT]", Usage: "the machine, as ssh reaches it (Host entries of ~/.ssh/config work)"}},
				Local: true, Run: runContextCreate},
			{Name: "use", Summary: "make commands use context NAME (default: this machine)", Usage: "context use NAME", Local: true, Run: runContextUse},
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the contexts; * marks the current one", Usage: "context ls", Local: true, Run: runContextLs},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "forget a context", Usage: "context rm NAME", Local: true, Run: runContextRm},
			{Name: "show", Summary: "say which daemon commands reach, and what chose it", Usage: "context show", Local: true, Run: runContextShow},
		},
	}
}

// contextEntry is one named daemon.
type contextEntry struct {
	Name string `json:"name"`
	Host string `json:"host"`
}

// contextFile is the contexts file (paths.Contexts), written atomically.
type contextFile struct {
	// Current is the context commands use; "" is this machine's daemon.
	Current  string         `json:"current,omitempty"`
	Contexts []contextEntry `json:"contexts"`
}

func (f *contextFile) find(name string) *contextEntry {
	i := slices.IndexFunc(f.Contexts, func(c contextEntry) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &f.Contexts[i]
}

func (e *Env) readContexts() (*contextFile, string, error) {
	p, err := e.paths()
	if err != nil {
		return nil, "", err
	}
	f := &contextFile{}
	data, err := os.ReadFile(p.Contexts)
	if errors.Is(err, os.ErrNotExist) {
		return f, p.Contexts, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the contexts: %w", err)
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, "", fmt.Errorf("reading the contexts in %s: %w (fix or remove the file)", p.Contexts, err)
	}
	return f, p.Contexts, nil
}

func (e *Env) writeContexts(f *contextFile) error {
	p, err := e.paths()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.State, 0o700); err != nil {
		return fmt.Errorf("creating the state folder: %w", err)
	}
	slices.SortFunc(f.Contexts, func(a, b contextEntry) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(p.Contexts, append(data, '\n'), 0o600)
}

// validContextName: 1-63 letters, digits, '.', '_' or '-', starting with a
// letter or digit (it is a word on command lines and in the file).
func validContextName(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

func runContextCreate(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve context create` needs one NAME")
	}
	name, host := inv.Args[0], inv.Flag("host")
	switch {
	case name == defaultContext:
		return usagef(inv, "%q is this machine's daemon and cannot be created: pick another name", name)
	case !validContextName(name):
		return usagef(inv, "%q is not a context name: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	case host == "":
		return usagef(inv, "`nerve context create %s` needs --host ssh://[USER@]HOST[:PORT]", name)
	}
	target, err := client.ParseSSH(host)
	if err != nil {
		return usagef(inv, "--host: %v", err)
	}
	f, _, err := env.readContexts()
	if err != nil {
		return err
	}
	if c := f.find(name); c != nil {
		return usagef(inv, "context %q exists (%s): remove it first with `nerve context rm %s`", name, c.Host, name)
	}
	f.Contexts = append(f.Contexts, contextEntry{Name: name, Host: target.String()})
	if err := env.writeContexts(f); err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, contextEntry{Name: name, Host: target.String()})
	}
	fmt.Fprintf(env.Stdout, "created context %s (%s); use it with `nerve context use %s`\n", name, target, name)
	return nil
}

func runContextUse(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve context use` needs one NAME (%q for this machine)", defaultContext)
	}
	name := inv.Args[0]
	f, _, err := env.readContexts()
	if err != nil {
		return err
	}
	host := "this machine"
	if name == defaultContext {
		f.Current = ""
	} else {
		c := f.find(name)
		if c == nil {
			return usagef(inv, "no context %q (%s; see `nerve context ls`)", name, contextNames(f))
		}
		f.Current, host = name, c.Host
	}
	if err := env.writeContexts(f); err != nil {
		return err
	}
	if !env.JSON {
		fmt.Fprintf(env.Stdout, "commands now use context %s (%s)\n", name, host)
	}
	if h := env.getenv("NERVE_HOST"); h != "" {
		fmt.Fprintf(env.Stderr, "nerve: NERVE_HOST=%s is set and overrides the context: unset it to use %s\n", h, name)
	}
	return nil
}

func contextNames(f *contextFile) string {
	names := []string{defaultContext}
	for _, c := range f.Contexts {
		names = append(names, c.Name)
	}
	return "contexts: " + strings.Join(names, ", ")
}

func runContextLs(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve context ls` takes no arguments")
	}
	f, _, err := env.readContexts()
	if err != nil {
		return err
	}
	type row struct {
		Name    string `json:"name"`
		Host    string `json:"host,omitempty"`
		Current bool   `json:"current"`
	}
	rows := []row{{Name: defaultContext, Current: f.Current == ""}}
	for _, c := range f.Contexts {
		rows = append(rows, row{Name: c.Name, Host: c.Host, Current: c.Name == f.Current})
	}
	if env.JSON {
		return printJSON(env, rows)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tHOST")
	for _, r := range rows {
		mark, host := "", r.Host
		if r.Current {
			mark = " *"
		}
		if host == "" {
			host = "(this machine)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\n", r.Name, mark, host)
	}
	return tw.Flush()
}

func runContextRm(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve context rm` needs one NAME")
	}
	name := inv.Args[0]
	if name == defaultContext {
		return usagef(inv, "%q is this machine's daemon and cannot be removed", name)
	}
	f, _, err := env.readContexts()
	if err != nil {
		return err
	}
	if f.find(name) == nil {
		return usagef(inv, "no context %q (%s)", name, contextNames(f))
	}
	f.Contexts = slices.DeleteFunc(f.Contexts, func(c contextEntry) bool { return c.Name == name })
	wasCurrent := f.Current == name
	if wasCurrent {
		f.Current = ""
	}
	if err := env.writeContexts(f); err != nil {
		return err
	}
	if !env.JSON {
		fmt.Fprintf(env.Stdout, "removed context %s\n", name)
		if wasCurrent {
			fmt.Fprintln(env.Stdout, "commands now use context default (this machine)")
		}
	}
	return nil
}

func runContextShow(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve context show` takes no arguments")
	}
	host, from, err := env.hostSetting()
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, map[string]string{"host": host, "from": from})
	}
	if host == "" {
		host = "this machine"
	}
	fmt.Fprintf(env.Stdout, "%s (from %s)\n", host, from)
	return nil
}

// hostSetting returns the ssh:// URL of the daemon commands reach ("" for
// this machine's) and what chose it: -H, else NERVE_HOST, else the
// current context.
func (e *Env) hostSetting() (host, from string, err error) {
	if e.Host != "" {
		return e.Host, "-H", nil
	}
	if h := e.getenv("NERVE_HOST"); h != "" {
		return h, "NERVE_HOST", nil
	}
	f, path, err := e.readContexts()
	if err != nil {
		return "", "", err
	}
	if f.Current == "" {
		return "", "context " + defaultContext, nil
	}
	c := f.find(f.Current)
	if c == nil {
		return "", "", fmt.Errorf("the current context %q is not in %s: `nerve context use default`, or create it again", f.Current, path)
	}
	return c.Host, "context " + c.Name, nil
}

// remote returns the daemon on another machine that commands reach, or
// nil for this machine's. NERVE_SSH_COMMAND replaces the ssh command and
// its options, as GIT_SSH_COMMAND does for git: it is split into words
// as the shell would, variables expanded; NERVE_REMOTE_COMMAND is the
// command that runs nerve on the host.
func (e *Env) remote() (*client.SSH, error) {
	if e.Embedded {
		// The daemon is this process: only -H, said on the same command
		// line, contradicts it.
		if e.Host != "" {
			return nil, &UsageError{Msg: "--embedded runs the daemon in this process, and -H names one on another machine: drop one of them"}
		}
		return nil, nil
	}
	host, from, err := e.hostSetting()
	if err != nil || host == "" {
		return nil, err
	}
	r, err := client.ParseSSH(host)
	if err != nil {
		if from == "-H" {
			return nil, &UsageError{Msg: fmt.Sprintf("-H: %v", err)}
		}
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if c := e.getenv("NERVE_SSH_COMMAND"); c != "" {
		words, err := shell.Fields(c, e.getenv)
		if err != nil {
			return nil, fmt.Errorf("NERVE_SSH_COMMAND %q: %w", c, err)
		}
		if len(words) == 0 {
			return nil, fmt.Errorf("NERVE_SSH_COMMAND %q names no command", c)
		}
		r.Command = words
	}
	r.Remote = e.getenv("NERVE_REMOTE_COMMAND")
	return r, nil
}

// connectRemote returns a client of the daemon on r's host. It asks its
// version once, which makes the first ssh connection (and, with start,
// has the host start its daemon); the client keeps that connection for
// the requests that follow.
func (e *Env) connectRemote(ctx context.Context, r *client.SSH, start bool) (*client.Client, bool, error) {
	c := e.newRemoteClient(r, start)
	_, err := c.Version(client.WithRevive(ctx, start))
	if err != nil {
		c.Close()
		return nil, false, err
	}
	return c, false, nil
}

// remoteOptions are the client options for the daemon on r's host. The
// nodes added there see that machine's environment, never this one's:
// no Environ (docs/remote.md).
func (e *Env) remoteOptions(r *client.SSH) client.Options {
	opts := e.clientOptions("", r.Dial, nil)
	opts.OnVersionMismatch = func(v string) {
		fmt.Fprintf(e.Stderr, "nerve: warning: the daemon on %s is version %s and this nerve is %s; restart it with `nerve -H %s daemon stop` (the next command starts the version installed there)\n", r.Host, v, Version(), r)
	}
	return opts
}

// newRemoteClient is a client of the daemon on r's host. Each of its
// connections starts the daemon there if it is not running, so a daemon
// that stops between two requests needs no Revive of its own: Revive
// only drops the connections to the old one, and the request goes again
// on a new one. Without start, no connection starts a daemon
// (`dial-stdio --no-start`), and nothing is sent again: what only
// looks (daemon status, stop, completion) never starts one.
func (e *Env) newRemoteClient(r *client.SSH, start bool) *client.Client {
	opts := e.remoteOptions(r)
	if !start {
		opts.Dial = func(ctx context.Context) (net.Conn, error) { return r.Dial(client.WithRevive(ctx, false)) }
		return client.New(opts)
	}
	var c *client.Client
	opts.Revive = func(context.Context) error {
		c.Close()
		return nil
	}
	c = client.New(opts)
	return c
}

// notThroughSSH is the error of a command that works on this machine's
// files (nil when the daemon is this machine's): what it would change is
// not what a daemon on another machine reads.
func notThroughSSH(env *Env, inv *Invocation) error {
	r, err := env.remote()
	if err != nil || r == nil {
		return err
	}
	_, from, _ := env.hostSetting()
	local := "`nerve context use default`"
	switch from {
	case "-H":
		local = "drop -H"
	case "NERVE_HOST":
		local = "unset NERVE_HOST"
	}
	cmd := "nerve " + strings.Join(inv.Path, " ")
	return fmt.Errorf("`%s` works on this machine's files, which the daemon on %s does not read: run it there (`ssh %s %s …`), or for this machine's daemon %s",
		cmd, r.Host, r.Host, cmd, local)
}

// forwardHint is what to do with an address on the loopback of another
// machine: forward its port with ssh. "" when the daemon is this
// machine's.
func forwardHint(env *Env, addr string) string {
	r, _ := env.remote()
	if r == nil {
		return ""
	}
	u, err := url.Parse(addr)
	if err != nil || u.Port() == "" {
		return fmt.Sprintf("this address is on %s's loopback: forward its port with `ssh -N -L PORT:127.0.0.1:PORT %s`", r.Host, r.Host)
	}
	return fmt.Sprintf("this address is on %s's loopback: forward it here with `ssh -N -L %s:127.0.0.1:%s %s`, then open it", r.Host, u.Port(), u.Port(), r.Host)
}
