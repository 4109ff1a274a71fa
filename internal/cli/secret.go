package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chzyer/readline"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/tokenstore"
)

// secretCmd is `nerve secret` (issue 32, item 5): values nodes name as
// ${keychain:NAME}, kept in the OS keychain (else 0600 files), never in a
// session's state, a log, `node info` or a command line.
func secretCmd() *Command {
	return &Command{
		Name:    "secret",
		Summary: "keep secrets that nodes name as ${keychain:NAME} in the OS keychain",
		Usage:   "secret set NAME | rm NAME... | ls",
		Help: `A node's env, headers and oauth settings may name a secret as
${keychain:NAME}: it is read when the node starts, from the OS keychain
(macOS Keychain, Windows Credential Manager, the Secret Service on Linux
desktops) or, where none answers, a 0600 file in the state folder
(NERVE_TOKENS=file|keychain chooses, as for sign-ins). The value is never
written to the session's state, the logs, node info or the server's
command line; a secret in a command's arguments or a URL is refused.

The value is read from the terminal without echo, or from stdin when it is
not a terminal — never from an argument, which every user of the machine
can see (ps) and your shell keeps in its history.

Examples:
  nerve secret set GITHUB_TOKEN                 (type it; it is not shown)
  gh auth token | nerve secret set GITHUB_TOKEN
  nerve node add mcp gh --url https://api.githubcopilot.com/mcp/ --header 'Authorization: Bearer ${keychain:GITHUB_TOKEN}'
  nerve node add mcp db --env 'PGPASSWORD=${keychain:PG}' -- npx -y @modelcontextprotocol/server-postgres
  nerve secret ls
  nerve secret rm GITHUB_TOKEN`,
		Sub: []*Command{
			{Name: "set", Summary: "store a secret, read from the terminal (not shown) or stdin", Usage: "secret set NAME", Local: true, Run: runSecretSet},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "remove secrets", Usage: "secret rm NAME...", Local: true, Run: runSecretRm},
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the secrets' names (never their values)", Usage: "secret ls", Local: true, Run: runSecretLs},
		},
	}
}

// openSecrets opens nerve's secrets in the store sign-ins use: this
// machine's, so not for a daemon reached through ssh, which reads its own.
func openSecrets(env *Env, inv *Invocation) (*tokenstore.Secrets, error) {
	if err := notThroughSSH(env, inv); err != nil {
		return nil, err
	}
	return openLocalSecrets(env)
}

func openLocalSecrets(env *Env) (*tokenstore.Secrets, error) {
	p, err := env.paths()
	if err != nil {
		return nil, err
	}
	if err := p.Ensure(); err != nil {
		return nil, err
	}
	store, err := tokenstore.Open(p.State, env.getenv("NERVE_TOKENS"))
	if err != nil {
		return nil, err
	}
	return tokenstore.NewSecrets(store, p.State), nil
}

// maxSecret bounds a secret read from stdin.
const maxSecret = 1 << 20

func runSecretSet(ctx context.Context, env *Env, inv *Invocation) error {
	switch {
	case len(inv.Args) == 0:
		return usagef(inv, "`nerve secret set` needs a NAME, e.g. `nerve secret set GITHUB_TOKEN`; the value is read from the terminal or stdin")
	case len(inv.Args) > 1 || strings.Contains(inv.Args[0], "="):
		// Never echo what was given: it is most likely the value.
		return usagef(inv, "`nerve secret set` takes only a NAME: the value is read from the terminal (not shown) or stdin, never from an argument, which every user of the machine can see (ps) and your shell keeps in its history; run `nerve secret set NAME` and type it, or pipe it in (`… | nerve secret set NAME`)")
	case !tokenstore.ValidSecretName(inv.Args[0]):
		return usagef(inv, "%q is not a secret name: use letters, digits and _, not starting with a digit (as in ${keychain:NAME})", inv.Args[0])
	}
	name := inv.Args[0]
	if err := notThroughSSH(env, inv); err != nil {
		return err // before the value is typed
	}
	value, err := readSecret(env, name)
	if err != nil {
		return err
	}
	if value == "" {
		return usagef(inv, "the value is empty: nothing stored (type the value, or pipe it in)")
	}
	secrets, err := openSecrets(env, inv)
	if err != nil {
		return err
	}
	if err := secrets.Set(name, value); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "stored secret %s in %s; nodes that name ${keychain:%s} get it when they next start (`nerve node restart NODE`)\n", name, secrets.Where(), name)
	return nil
}

// readSecret reads a value from the terminal without echo, or all of
// stdin less one final line break.
func readSecret(env *Env, name string) (string, error) {
	if f, ok := env.Stdin.(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		// Echo off before the prompt shows: what is typed or pasted at
		// once must not appear. ReadPassword turns it off only when it
		// starts reading, and restores the raw mode set here.
		fd := int(f.Fd())
		raw, rawErr := readline.MakeRaw(fd)
		fmt.Fprintf(env.Stderr, "value of secret %s (not shown): ", name)
		b, err := readline.ReadPassword(fd)
		if rawErr == nil {
			_ = readline.Restore(fd, raw)
		}
		fmt.Fprintln(env.Stderr)
		if err != nil {
			return "", fmt.Errorf("reading the secret from the terminal: %w", err)
		}
		return string(b), nil
	}
	if env.Stdin == nil {
		// The Commander's `:secret set`: its terminal is the prompt's.
		return "", fmt.Errorf("nothing to read the secret from here: run `nerve secret set %s` in a shell, and type the value or pipe it in", name)
	}
	b, err := io.ReadAll(io.LimitReader(env.Stdin, maxSecret+1))
	if err != nil {
		return "", fmt.Errorf("reading the secret from stdin: %w", err)
	}
	if len(b) > maxSecret {
		return "", fmt.Errorf("the secret on stdin is over %d bytes", maxSecret)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return string(b), nil
}

func runSecretRm(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) == 0 {
		return usagef(inv, "`nerve secret rm` needs a NAME")
	}
	secrets, err := openSecrets(env, inv)
	if err != nil {
		return err
	}
	for _, name := range inv.Args {
		found, err := secrets.Delete(name)
		if err != nil {
			return err
		}
		if !found {
			return usagef(inv, "there is no secret %s (`nerve secret ls` lists them)", name)
		}
		fmt.Fprintf(env.Stderr, "removed secret %s\n", name)
	}
	return nil
}

func runSecretLs(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve secret ls` takes no arguments")
	}
	secrets, err := openSecrets(env, inv)
	if err != nil {
		return err
	}
	names, err := secrets.Names()
	if err != nil {
		return err
	}
	if env.JSON {
		if names == nil {
			names = []string{}
		}
		return printJSON(env, names)
	}
	if len(names) == 0 {
		fmt.Fprintln(env.Stderr, "no secrets; store one with `nerve secret set NAME`")
		return nil
	}
	for _, n := range names {
		fmt.Fprintln(env.Stdout, n)
	}
	return nil
}

// secretLookup is the daemon's answer to ${keychain:NAME}: a secret that
// is not stored is "not set" (the node's start says how to set it); a
// keychain that fails is logged — with the name, never a value — and
// treated alike.
func secretLookup(s *tokenstore.Secrets, log *zap.Logger) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, err := s.Get(name)
		if err != nil {
			if !errors.Is(err, tokenstore.ErrNoSecret) {
				log.Warn("reading a secret", zap.String("secret", name), zap.Error(err))
			}
			return "", false
		}
		return v, true
	}
}
