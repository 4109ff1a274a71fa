package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

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
	if len(tools) == 0 {
		fmt.Fprintln(env.Stderr, "no tools: no node is READY (see `nerve node ls`)")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, t := range tools {
		desc := ""
		if t.MCPTool != nil {
			desc = t.MCPTool.Description
			if desc == "" {
				desc = t.MCPTool.Title
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", t.Qualified, firstLine(strings.TrimSpace(desc)))
	}
	return tw.Flush()
}
