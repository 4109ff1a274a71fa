package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

func sessionCmd() *Command {
	return &Command{
		Name:    "session",
		Summary: "list, remove and set up sessions",
		Usage:   "session COMMAND",
		Help:    "A session is made when its first node is added: `nerve -s work node add bash sh`.",
		Sub: []*Command{
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the daemon's sessions", Usage: "session ls", Run: runSessionLs},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "stop every node of a session and forget it", Usage: "session rm NAME", Complete: "session", Run: runSessionRm},
			{Name: "set", Summary: "set a setting of the session: idle DURATION (stop unused MCP servers; 0 for never)", Usage: "session set idle DURATION", Run: runSessionSet},
			{Name: "show", Summary: "show the session's settings", Usage: "session show", Run: runSessionShow},
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

func runSessionSet(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 2 || inv.Args[0] != "idle" {
		return usagef(inv, "`nerve session set` takes idle DURATION, e.g. `nerve session set idle 10m` (0 turns it off)")
	}
	d, err := time.ParseDuration(inv.Args[1])
	if inv.Args[1] == "0" || inv.Args[1] == "off" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return usagef(inv, "idle %q: use a duration such as 10m or 1h, or 0 to turn it off", inv.Args[1])
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	st.Idle = node.Duration(d)
	if st, err = s.SetSettings(ctx, st); err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, st)
	}
	if d == 0 {
		fmt.Fprintf(env.Stdout, "session %s: MCP servers keep running when unused\n", s.Name())
	} else {
		fmt.Fprintf(env.Stdout, "session %s: an MCP server unused for %v stops (its tools stay listed; the next call starts it); a node's own idle option wins\n", s.Name(), d)
	}
	return nil
}

func runSessionShow(ctx context.Context, env *Env, inv *Invocation) error {
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, st)
	}
	idle := "off"
	if st.Idle > 0 {
		idle = time.Duration(st.Idle).String()
	}
	fmt.Fprintf(env.Stdout, "session %s\nidle  %s\n", s.Name(), idle)
	return nil
}
