package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/pkg/api"
)

func runTools(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 1 {
		return usagef(inv, "`nerve tools` takes at most one NODE")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	var tools []api.Tool
	if len(inv.Args) == 1 {
		id := inv.Args[0]
		ts, err := s.Tools(ctx, id)
		if err != nil {
			return err
		}
		for _, t := range ts {
			tools = append(tools, api.Tool{Node: id, Qualified: id + "." + t.Name, Tool: t})
		}
	} else {
		tools, err = s.Toolset(ctx)
		if err != nil {
			return err
		}
	}
	if env.JSON {
		if tools == nil {
			tools = []api.Tool{}
		}
		return printJSON(env, tools)
	}
	if len(tools) == 0 {
		fmt.Fprintln(env.Stderr, "no tools: no node is READY (see `nerve node ls`)")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, t := range tools {
		desc := ""
		if t.Tool != nil {
			desc = t.Tool.Description
			if desc == "" {
				desc = t.Tool.Title
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", t.Qualified, firstLine(strings.TrimSpace(desc)))
	}
	return tw.Flush()
}
