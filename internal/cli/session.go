package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/pkg/api"
)

func sessionCmd() *Command {
	return &Command{
		Name:    "session",
		Summary: "list and remove sessions",
		Usage:   "session COMMAND",
		Help:    "A session is made when its first node is added: `nerve -s work node add bash sh`.",
		Sub: []*Command{
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the daemon's sessions", Usage: "session ls", Run: runSessionLs},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "stop every node of a session and forget it", Usage: "session rm NAME", Complete: "session", Run: runSessionRm},
		},
	}
}

func runSessionLs(ctx context.Context, env *Env, inv *Invocation) error {
	c, err := env.Connect(ctx)
	if err != nil {
		return err
	}
	ss, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	if env.JSON {
		if ss == nil {
			ss = []api.SessionInfo{}
		}
		return printJSON(env, ss)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tNODES\tSTATES")
	for _, s := range ss {
		var states []string
		for st, n := range s.States {
			states = append(states, fmt.Sprintf("%d %s", n, st))
		}
		sort.Strings(states)
		mark := ""
		if s.Name == env.SessionName() {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%s\n", s.Name, mark, s.Nodes, strings.Join(states, ", "))
	}
	return tw.Flush()
}

func runSessionRm(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve session rm` needs one NAME")
	}
	c, err := env.Connect(ctx)
	if err != nil {
		return err
	}
	if err := c.RemoveSession(ctx, inv.Args[0]); err != nil {
		return err
	}
	if !env.JSON {
		fmt.Fprintf(env.Stdout, "removed session %s\n", inv.Args[0])
	}
	return nil
}
