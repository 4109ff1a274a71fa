package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
)

// toolsCmd is `nerve tools`: the session's tools, one node's, or, with
// --search, those that do what the words say, ranked as search_tools of
// `nerve mcp serve --discover` ranks them (the session's one index).
func toolsCmd() *Command {
	return &Command{
		Name:    "tools",
		Summary: "list every tool of the session as node.tool, or one node's tools, or search them by what they do",
		Usage:   "tools [NODE] | tools --search WORDS... [--limit N]",
		Help: `--search ranks the session's tools for what the words say, as an agent's
search_tools does, best first; when no tool matches the words it shows the
nearest and says so.

Examples:
  nerve tools
  nerve tools fs
  nerve tools --search create a ticket on github`,
		Flags: []*Flag{
			{Name: "search", Usage: "rank the tools for the words that follow"},
			{Name: "limit", Value: "N", Usage: "how many tools --search shows (default 5)"},
		},
		Complete: "node",
		Run: func(ctx context.Context, env *Env, inv *Invocation) error {
			if inv.Bool("search") {
				return runToolsSearch(ctx, env, inv)
			}
			if inv.Flag("limit") != "" {
				return usagef(inv, "--limit goes with --search: `nerve tools --search WORDS --limit 10`")
			}
			return runTools(ctx, env, inv)
		},
	}
}

func runToolsSearch(ctx context.Context, env *Env, inv *Invocation) error {
	words := strings.Join(inv.Args, " ")
	if strings.TrimSpace(words) == "" {
		return usagef(inv, "`nerve tools --search` needs words for what the tool should do: `nerve tools --search read a file`")
	}
	limit := 0
	if l := inv.Flag("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return usagef(inv, "--limit %q: give a whole number of 1 or more", l)
		}
		limit = n
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	res, err := s.SearchTools(ctx, words, limit)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, res)
	}
	if len(res.Tools) == 0 {
		fmt.Fprintln(env.Stderr, "no tools: no node is READY (see `nerve node ls`)")
		return nil
	}
	if res.Nearest {
		fmt.Fprintf(env.Stderr, "no tool matches %q; the nearest of %d by spelling:\n", words, res.Of)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	for _, t := range res.Tools {
		var mt struct{ Title, Description string }
		_ = json.Unmarshal(t.Tool.Tool, &mt)
		desc := mt.Description
		if desc == "" {
			desc = mt.Title
		}
		fmt.Fprintf(tw, "%s\t%s\n", t.Qualified, firstLine(strings.TrimSpace(desc)))
	}
	return tw.Flush()
}
