package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

func nodeCmd() *Command {
	return &Command{
		Name:    "node",
		Summary: "add, list, inspect, remove and restart nodes",
		Usage:   "node COMMAND",
		Sub: []*Command{
			{
				Name:    "add",
				Summary: "add a node and start it",
				Usage:   "node add KIND NAME [flags] [-- COMMAND ARGS...]",
				Help: `KIND is a node kind (see ` + "`nerve node kinds`" + `); NAME is the node's id:
lower-case letters, digits, '_' and '-'. ${VAR} and ${VAR:-default} in the
command, env, cwd, url and headers are kept as written and expanded when
the node starts.

Examples:
  nerve node add bash sh --cwd /srv
  nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp
  nerve node add mcp gh --url https://host/mcp --header 'Authorization: Bearer ${TOKEN}'
  nerve node add claude cc --session-tools -- claude
  nerve node add identity echo`,
				Complete: "kind",
				Flags: []*Flag{
					{Name: "cwd", Value: "DIR", Usage: "working folder of the node (default: the current folder)"},
					{Name: "env", Value: "KEY=VALUE", Usage: "environment variable for the node", Repeat: true},
					{Name: "url", Value: "URL", Usage: "MCP server URL (streamable HTTP or SSE)"},
					{Name: "transport", Value: "http|sse", Usage: "transport for --url (default http)"},
					{Name: "header", Value: "'KEY: VALUE'", Usage: "HTTP header for --url", Repeat: true},
					{Name: "session-tools", Usage: "give the node the session's tools (claude, llm)"},
					{Name: "option", Value: "KEY=VALUE", Usage: "kind-specific option (VALUE read as JSON when it parses)", Repeat: true},
					{Name: "options", Value: "JSON", Usage: "kind-specific options as a JSON object"},
				},
				Run: runNodeAdd,
			},
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the session's nodes", Usage: "node ls", Run: runNodeLs},
			{Name: "info", Summary: "show a node's state, error, counters and spec", Usage: "node info NAME", Complete: "node", Run: runNodeInfo},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "stop a node and remove it", Usage: "node rm NAME...", Complete: "node", Run: runNodeRm},
			{Name: "restart", Summary: "stop a node (from any state, ERROR too) and start it again", Usage: "node restart NAME", Complete: "node", Run: runNodeRestart},
			{Name: "interrupt", Summary: "cancel what a node is doing; it stays usable", Usage: "node interrupt NAME", Complete: "node", Run: runNodeInterrupt},
			{Name: "kinds", Summary: "list the node kinds this nerve can run", Usage: "node kinds", Run: runNodeKinds},
		},
	}
}

func (e *Env) session(ctx context.Context) (*client.Session, error) {
	c, err := e.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return c.Session(e.SessionName()), nil
}

func printJSON(env *Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runNodeAdd(ctx context.Context, env *Env, inv *Invocation) error {
	args := inv.Args[:len(inv.Args)-len(inv.Rest)]
	if len(args) != 2 {
		return usagef(inv, "`nerve node add` needs KIND and NAME (got %d arguments)", len(args))
	}
	spec := node.Spec{Kind: args[0], ID: args[1], Command: inv.Rest}
	if err := node.ValidateID(spec.ID); err != nil {
		return usagef(inv, "%v", err)
	}
	spec.Cwd = inv.Flag("cwd")
	if spec.Cwd == "" {
		// The daemon runs elsewhere: a node starts where the user is.
		if wd, err := os.Getwd(); err == nil {
			spec.Cwd = wd
		}
	}
	for _, kv := range inv.All("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef(inv, "--env %q: use KEY=VALUE", kv)
		}
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	opts := map[string]any{}
	if o := inv.Flag("options"); o != "" {
		if err := json.Unmarshal([]byte(o), &opts); err != nil {
			return usagef(inv, "--options must be a JSON object: %v", err)
		}
	}
	if u := inv.Flag("url"); u != "" {
		opts["url"] = u
		opts["transport"] = "http"
	}
	if t := inv.Flag("transport"); t != "" {
		if t != "http" && t != "sse" {
			return usagef(inv, "--transport %q: use http or sse", t)
		}
		opts["transport"] = t
	}
	if hs := inv.All("header"); len(hs) > 0 {
		headers := map[string]string{}
		for _, h := range hs {
			k, v, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return usagef(inv, "--header %q: use 'KEY: VALUE'", h)
			}
			headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		opts["headers"] = headers
	}
	if inv.Bool("session-tools") {
		opts["session_tools"] = true
	}
	for _, kv := range inv.All("option") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef(inv, "--option %q: use KEY=VALUE", kv)
		}
		var val any
		if json.Unmarshal([]byte(v), &val) != nil {
			val = v
		}
		opts[k] = val
	}
	if len(opts) > 0 {
		b, err := json.Marshal(opts)
		if err != nil {
			return err
		}
		spec.Options = b
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	info, err := s.Add(ctx, spec)
	if err != nil {
		var ce *client.Error
		if env.JSON && errors.As(err, &ce) && ce.Node != nil {
			_ = printJSON(env, ce.Node)
		}
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stdout, "%s %s is %s with %d tool%s\n", info.Kind, info.ID, info.State, info.Tools, plural(info.Tools))
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func runNodeLs(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve node ls` takes no arguments")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	infos, err := s.Nodes(ctx)
	if err != nil {
		return err
	}
	if env.JSON {
		if infos == nil {
			infos = []node.Info{}
		}
		return printJSON(env, infos)
	}
	if len(infos) == 0 {
		fmt.Fprintf(env.Stderr, "session %q has no nodes; add one with `nerve node add KIND NAME`\n", s.Name())
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKIND\tSTATE\tTOOLS\tCALLS\tDETAIL")
	for _, i := range infos {
		detail := i.Summary
		if i.Error != "" {
			detail = firstLine(i.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", i.ID, i.Kind, i.State, i.Tools, i.Calls, detail)
	}
	return tw.Flush()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

func oneNode(inv *Invocation) (string, error) {
	if len(inv.Args) != 1 {
		return "", usagef(inv, "`nerve %s` needs one NAME", strings.Join(inv.Path, " "))
	}
	return inv.Args[0], nil
}

func runNodeInfo(ctx context.Context, env *Env, inv *Invocation) error {
	id, err := oneNode(inv)
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	d, err := s.Node(ctx, id)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, d)
	}
	i := d.Info
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "node\t%s\n", i.ID)
	fmt.Fprintf(tw, "kind\t%s\n", i.Kind)
	fmt.Fprintf(tw, "state\t%s since %s\n", i.State, i.Since.Format("2006-01-02 15:04:05"))
	if i.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", strings.ReplaceAll(i.Error, "\n", "\n\t"))
	}
	if i.Summary != "" {
		fmt.Fprintf(tw, "runs\t%s\n", i.Summary)
	}
	fmt.Fprintf(tw, "tools\t%d\n", i.Tools)
	fmt.Fprintf(tw, "calls\t%d (%d failed, %d in flight)\n", i.Calls, i.Failures, i.InFlight)
	if len(d.Spec.Command) > 0 {
		fmt.Fprintf(tw, "command\t%s\n", strings.Join(d.Spec.Command, " "))
	}
	if d.Spec.Cwd != "" {
		fmt.Fprintf(tw, "cwd\t%s\n", d.Spec.Cwd)
	}
	for k, v := range d.Spec.Env {
		fmt.Fprintf(tw, "env\t%s=%s\n", k, v)
	}
	if len(d.Spec.Options) > 0 {
		fmt.Fprintf(tw, "options\t%s\n", d.Spec.Options)
	}
	for k, v := range i.Details {
		fmt.Fprintf(tw, "%s\t%v\n", k, v)
	}
	return tw.Flush()
}

func runNodeRm(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) == 0 {
		return usagef(inv, "`nerve node rm` needs at least one NAME")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range inv.Args {
		if err := s.Remove(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		if !env.JSON {
			fmt.Fprintf(env.Stdout, "removed %s\n", id)
		}
	}
	return errors.Join(errs...)
}

func runNodeRestart(ctx context.Context, env *Env, inv *Invocation) error {
	id, err := oneNode(inv)
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	info, err := s.Restart(ctx, id)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stdout, "%s is %s\n", info.ID, info.State)
	return nil
}

func runNodeInterrupt(ctx context.Context, env *Env, inv *Invocation) error {
	id, err := oneNode(inv)
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	return s.Interrupt(ctx, id)
}

func runNodeKinds(ctx context.Context, env *Env, inv *Invocation) error {
	c, err := env.Connect(ctx)
	if err != nil {
		return err
	}
	kinds, err := c.Kinds(ctx)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, kinds)
	}
	for _, k := range kinds {
		fmt.Fprintln(env.Stdout, k)
	}
	return nil
}
