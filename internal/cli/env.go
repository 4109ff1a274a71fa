package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/envfile"
)

func envCmd() *Command {
	return &Command{
		Name:    "env",
		Summary: "set the variables nodes' ${VAR} references resolve against after a restart",
		Usage:   "env set KEY=VALUE... | unset KEY... | ls [--show]",
		Help: `A node's ${VAR} references resolve against the environment of the
command that added or last restarted it, then against nerve's private env
file, then against the daemon's own environment. A node the daemon brings
back after it restarts has no client: give it what it needs here. The file
is in the state folder, 0600, in the .env syntax (KEY=VALUE, # comments,
quotes, an export prefix); values are never written anywhere else. A change
applies when a node next starts (nerve node restart NAME).

Examples:
  nerve env set GITHUB_TOKEN=ghp_…
  nerve env ls
  nerve env unset GITHUB_TOKEN`,
		Sub: []*Command{
			{Name: "set", Summary: "set variables in nerve's env file", Usage: "env set KEY=VALUE...", Local: true, Run: runEnvSet},
			{Name: "unset", Summary: "remove variables from nerve's env file", Usage: "env unset KEY...", Local: true, Run: runEnvUnset},
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the variables of nerve's env file (values masked)", Usage: "env ls [--show]", Local: true, Run: runEnvLs,
				Flags: []*Flag{{Name: "show", Usage: "show the values, not masked"}}},
		},
	}
}

func envPath(env *Env, inv *Invocation) (string, error) {
	if err := notThroughSSH(env, inv); err != nil {
		return "", err // the env file a daemon reads is its machine's
	}
	p, err := env.paths()
	if err != nil {
		return "", err
	}
	if err := p.Ensure(); err != nil {
		return "", err
	}
	return daemon.EnvFile(p), nil
}

func runEnvSet(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) == 0 {
		return usagef(inv, "`nerve env set` needs KEY=VALUE, e.g. `nerve env set GITHUB_TOKEN=ghp_…`")
	}
	path, err := envPath(env, inv)
	if err != nil {
		return err
	}
	for _, kv := range inv.Args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !envfile.ValidKey(k) {
			return usagef(inv, "%q is not KEY=VALUE (a key is letters, digits and _, not starting with a digit)", kv)
		}
		if err := envfile.Set(path, k, v); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "set %s in %s; nodes see it when they next start (`nerve node restart NAME`)\n", k, path)
	}
	return nil
}

func runEnvUnset(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) == 0 {
		return usagef(inv, "`nerve env unset` needs KEY")
	}
	path, err := envPath(env, inv)
	if err != nil {
		return err
	}
	for _, k := range inv.Args {
		found, err := envfile.Unset(path, k)
		if err != nil {
			return err
		}
		if !found {
			return usagef(inv, "%s is not set in %s (`nerve env ls` lists what is)", k, path)
		}
		fmt.Fprintf(env.Stderr, "removed %s from %s\n", k, path)
	}
	return nil
}

func runEnvLs(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve env ls` takes no arguments")
	}
	path, err := envPath(env, inv)
	if err != nil {
		return err
	}
	es, err := envfile.Load(path)
	if err != nil {
		return err
	}
	show := inv.Bool("show")
	if env.JSON {
		out := make([]map[string]string, 0, len(es))
		for _, e := range es {
			m := map[string]string{"key": e.Key}
			if show {
				m["value"] = e.Value
			}
			out = append(out, m)
		}
		return printJSON(env, out)
	}
	if len(es) == 0 {
		fmt.Fprintf(env.Stderr, "%s sets no variables; add one with `nerve env set KEY=VALUE`\n", path)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE")
	for _, e := range es {
		v := mask(e.Value)
		if show {
			v = e.Value
		}
		fmt.Fprintf(tw, "%s\t%s\n", e.Key, v)
	}
	return tw.Flush()
}

// mask hides a value but its length class: "" stays empty.
func mask(v string) string {
	if v == "" {
		return `""`
	}
	return "••••••"
}
