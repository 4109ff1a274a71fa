package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nerve-dev/nerve/internal/mcpserver"
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
			{Name: "set", Summary: "set a setting of the session: idle DURATION (stop unused MCP servers; 0 for never), expose GLOBS (the tools every MCP client may see), policy RULES (allow, ask or deny agents' calls), ask-timeout DURATION", Usage: "session set idle DURATION | expose GLOBS | policy RULES | ask-timeout DURATION", Help: `idle DURATION   an MCP server node unused that long stops (its tools stay
                listed; the next call starts it); 0 turns it off.
expose GLOBS    the tools every MCP client of the session (nerve mcp serve,
                the HTTP endpoint, claude nodes with --session-tools) may see
                and call: comma-separated globs over node.tool, ! to exclude,
                e.g. 'fs.*,github.*,!github.delete_*'. A client's --tools can
                narrow it, never widen it. '' exposes every tool again.
policy RULES    whether a call from an agent (an MCP client, an llm node, a
                graph, a script) runs: comma-separated
                GLOB=allow|ask|deny over node.tool, the first rule that
                matches wins, no match allows, e.g.
                'fs.write_*=ask,*.delete_*=deny'. ask waits for a person: the
                calling MCP client if it can show a form, else the Commander.
                Your own calls (the Commander, nerve call, the dashboard,
                programs on the local API) always run.
                '' removes the policy.
ask-timeout D   how long an ask waits for a person before the call is
                refused (default 2m).`, Run: runSessionSet},
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
	if len(inv.Args) == 2 && inv.Args[0] == "expose" {
		return runSessionSetExpose(ctx, env, inv, inv.Args[1])
	}
	if len(inv.Args) == 2 && (inv.Args[0] == "policy" || inv.Args[0] == "ask-timeout") {
		return runSessionSetPolicy(ctx, env, inv, inv.Args[0], inv.Args[1]) // policy.go
	}
	if len(inv.Args) != 2 || inv.Args[0] != "idle" {
		return usagef(inv, "`nerve session set` takes idle DURATION (`nerve session set idle 10m`, 0 turns it off), expose GLOBS (`nerve session set expose 'fs.*,!fs.write_*'`, '' for every tool), policy RULES (`nerve session set policy 'fs.write_*=ask'`) or ask-timeout DURATION")
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

// runSessionSetExpose sets the tool filter every MCP client of the
// session gets.
func runSessionSetExpose(ctx context.Context, env *Env, inv *Invocation, globs string) error {
	f, err := mcpserver.ParseFilter(globs)
	if err != nil {
		return usagef(inv, "%v", err)
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	st.Expose = f.String()
	if st, err = s.SetSettings(ctx, st); err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, st)
	}
	if st.Expose == "" {
		fmt.Fprintf(env.Stdout, "session %s: MCP clients see every tool\n", s.Name())
	} else {
		fmt.Fprintf(env.Stdout, "session %s: MCP clients see only the tools %s chooses (a client's --tools can narrow it further)\n", s.Name(), st.Expose)
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
	expose := st.Expose
	if expose == "" {
		expose = "every tool"
	}
	fmt.Fprintf(env.Stdout, "session %s\nidle  %s\nexpose  %s\n", s.Name(), idle, expose)
	showPolicy(env, st) // policy.go
	return nil
}
