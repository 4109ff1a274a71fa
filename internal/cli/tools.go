package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
)

func runTools(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 1 {
		return usagef(inv, "`nerve tools` takes at most one NODE")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	var tools []mcpclient.ToolEntry
	if len(inv.Args) == 1 {
		id := inv.Args[0]
		ts, err := mcpclient.Tools(ctx, s, id)
		if err != nil {
			return err
		}
		for _, t := range ts {
			tools = append(tools, mcpclient.ToolEntry{Tool: api.Tool{Node: id, Qualified: id + "." + t.Name}, MCPTool: t})
		}
	} else {
		tools, err = mcpclient.Toolset(ctx, s)
		if err != nil {
			return err
		}
	}
	if env.JSON {
		if tools == nil {
			tools = []mcpclient.ToolEntry{}
		}
		return printJSON(env, tools)
	}
	// The nodes that are not running: their tools are marked with the
	// state, and a line on stderr says what a call to them does (issue 27).
	var infos []api.Info
	if len(inv.Args) == 1 {
		if d, err := s.Node(ctx, inv.Args[0]); err == nil {
			infos = []api.Info{d.Info}
		}
	} else {
		infos, _ = s.Nodes(ctx)
	}
	slices.SortFunc(infos, func(a, b api.Info) int { return strings.Compare(a.ID, b.ID) })
	notes, states := map[string]string{}, map[string]string{}
	for _, i := range infos {
		if n := commander.NodeNote(i); n != "" {
			notes[i.ID], states[i.ID] = n, i.State.String()
		}
	}
	if len(tools) == 0 {
		fmt.Fprintln(env.Stderr, "no tools: no node is READY (see `nerve node ls`)")
	} else {
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		for _, t := range tools {
			desc := ""
			if t.MCPTool != nil {
				desc = t.MCPTool.Description
				if desc == "" {
					desc = t.MCPTool.Title
				}
			}
			desc = firstLine(strings.TrimSpace(desc))
			if st := states[t.Node]; st != "" {
				desc = "[" + st + "] " + desc
			}
			fmt.Fprintf(tw, "%s\t%s\n", t.Qualified, desc)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, i := range infos {
		if n := notes[i.ID]; n != "" {
			fmt.Fprintln(env.Stderr, n)
		}
	}
	return nil
}
