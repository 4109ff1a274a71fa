package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

// toolCmd is `nerve tool`: what the session makes of one tool (issue 32).
func toolCmd() *Command {
	return &Command{
		Name:    "tool",
		Summary: "change how the session shows and calls one tool",
		Usage:   "tool override NODE.TOOL [flags]",
		Sub: []*Command{{
			Name:     "override",
			Summary:  "rename a tool, replace its description, set its hints, fix or hide its arguments",
			Usage:    "tool override NODE.TOOL [--name N] [--title T] [--description D] [--fix KEY=VALUE]... [--hide KEY]... [--read-only] [--destructive] [--idempotent] [--open-world] | --clear",
			Complete: "node",
			Help: `Every client of the session sees the tool as overridden — MCP clients
(nerve mcp serve, the HTTP endpoint, discovery), the Commander, llm and
claude nodes, graphs, nerve tools — and a call by its new name reaches
the real tool with the fixed arguments merged in. A call that gives a
fixed or hidden argument is refused (it says so), never silently changed.

Each command adds to the tool's override; --clear removes all of it. With
no flag it shows the override. NODE.TOOL may name the tool by its own name
or by the one an override gave it. The override is saved with the node
(its spec's "overrides") and checked against the tool's schema when set:
an unknown argument, a fixed value the schema refuses, a required argument
hidden without a value, or a name another tool of the node has is refused.

  --fix KEY=VALUE    every call gets KEY=VALUE; KEY leaves the schema.
                     VALUE is JSON when it parses (5, true, ["a"]), else
                     text; an argument that takes only text keeps it text.
  --hide KEY         KEY leaves the schema; the server's default applies.
  --read-only, --destructive, --idempotent, --open-world
                     set the tool's hint (=false to set it false).

Examples:
  nerve tool override fs.read_text_file --name read --description 'Read a file under /srv'
  nerve tool override fs.write_file --fix path=/srv/out.txt --destructive
  nerve tool override gh.search --hide per_page
  nerve tool override fs.read --clear`,
			Flags: []*Flag{
				{Name: "name", Value: "NAME", Usage: "the tool's new name"},
				{Name: "title", Value: "TITLE", Usage: "the tool's new title"},
				{Name: "description", Value: "TEXT", Usage: "the tool's new description"},
				{Name: "fix", Value: "KEY=VALUE", Usage: "fix an argument's value and hide it (repeatable)", Repeat: true},
				{Name: "hide", Value: "KEY", Usage: "hide an argument that is optional or has a default (repeatable)", Repeat: true},
				{Name: "read-only", Usage: "the tool does not change its environment"},
				{Name: "destructive", Usage: "the tool may destroy data"},
				{Name: "idempotent", Usage: "calling it again with the same arguments changes nothing more"},
				{Name: "open-world", Usage: "the tool reaches outside entities (the web, other people)"},
				{Name: "clear", Usage: "remove the tool's override"},
			},
			Run: runToolOverride,
		}},
	}
}

func runToolOverride(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 {
		return usagef(inv, "`nerve tool override` needs one NODE.TOOL, e.g. `nerve tool override fs.write_file --destructive`")
	}
	id, tool, ok := node.SplitQualified(inv.Args[0])
	if !ok {
		return usagef(inv, "%q is not NODE.TOOL: name the node and the tool, e.g. fs.read_file (`nerve tools` lists them)", inv.Args[0])
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	var ov api.ToolOverride
	ov.Name, ov.Title, ov.Description = inv.Flag("name"), inv.Flag("title"), inv.Flag("description")
	for flag, p := range map[string]**bool{"read-only": &ov.ReadOnly, "destructive": &ov.Destructive, "idempotent": &ov.Idempotent, "open-world": &ov.OpenWorld} {
		switch inv.Flag(flag) {
		case "true":
			*p = new(true)
		case "false":
			*p = new(false)
		}
	}
	ov.Hidden = inv.All("hide")
	if fixes := inv.All("fix"); len(fixes) > 0 {
		shown, _ := mcpclient.Tools(ctx, s, id) // to keep a text argument text; the daemon checks the rest
		ov.Fixed = map[string]json.RawMessage{}
		for _, kv := range fixes {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usagef(inv, "--fix %q is not KEY=VALUE, e.g. --fix path=/srv", kv)
			}
			ov.Fixed[k] = fixedValue(shown, tool, k, v)
		}
	}
	clear := inv.Bool("clear")
	if clear && !ov.IsZero() {
		return usagef(inv, "--clear removes the whole override: give it alone (then set again what you want kept)")
	}
	var out api.OverrideResponse
	switch {
	case clear:
		out, err = s.ClearOverride(ctx, id, tool)
	case ov.IsZero():
		return showOverride(ctx, env, s, id, tool)
	default:
		out, err = s.SetOverride(ctx, id, tool, ov, true)
	}
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, out)
	}
	var t mcp.Tool
	if len(out.Tool) == 0 || json.Unmarshal(out.Tool, &t) != nil {
		fmt.Fprintf(env.Stdout, "cleared the override of %s.%s\n", id, tool)
		return nil
	}
	verb := "now listed as"
	if clear {
		verb = "cleared: listed as"
	}
	fmt.Fprintf(env.Stdout, "%s.%s %s %s.%s\n", id, tool, verb, id, t.Name)
	if d := firstLine(strings.TrimSpace(t.Description)); d != "" {
		fmt.Fprintf(env.Stdout, "  %s\n", d)
	}
	return nil
}

// fixedValue is the JSON of --fix KEY=VALUE: the text itself for an
// argument of tool (as listed in shown) that takes only text, else VALUE
// when it is JSON, else VALUE as text (as --option reads VALUE).
func fixedValue(shown []*mcp.Tool, tool, key, value string) json.RawMessage {
	text, _ := json.Marshal(value)
	for _, t := range shown {
		if t.Name != tool {
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Type any `json:"type"`
			} `json:"properties"`
		}
		if b, err := json.Marshal(t.InputSchema); err == nil && json.Unmarshal(b, &schema) == nil {
			if p, ok := schema.Properties[key]; ok && p.Type == "string" {
				return text
			}
		}
	}
	if json.Valid([]byte(value)) {
		return json.RawMessage(value)
	}
	return text
}

// showOverride prints the override of node id's tool (by either name).
func showOverride(ctx context.Context, env *Env, s *client.Session, id, tool string) error {
	d, err := s.Node(ctx, id)
	if err != nil {
		return err
	}
	real, ov, found := "", api.ToolOverride{}, false
	for k, o := range d.Spec.Overrides {
		if k == tool || o.Name == tool {
			real, ov, found = k, o, true
		}
	}
	if env.JSON {
		if !found {
			return printJSON(env, struct{}{})
		}
		return printJSON(env, map[string]api.ToolOverride{real: ov})
	}
	if !found {
		fmt.Fprintf(env.Stdout, "%s.%s has no override (set one with `nerve tool override %s.%s --name NAME`, `--fix KEY=VALUE`, …)\n", id, tool, id, tool)
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s.%s:\n", id, real)
	line := func(k, v string) { fmt.Fprintf(env.Stdout, "  %-12s %s\n", k, v) }
	if ov.Name != "" {
		line("name", ov.Name)
	}
	if ov.Title != "" {
		line("title", ov.Title)
	}
	if ov.Description != "" {
		line("description", firstLine(ov.Description))
	}
	for _, h := range []struct {
		k string
		v *bool
	}{{"read-only", ov.ReadOnly}, {"destructive", ov.Destructive}, {"idempotent", ov.Idempotent}, {"open-world", ov.OpenWorld}} {
		if h.v != nil {
			line(h.k, fmt.Sprint(*h.v))
		}
	}
	keys := make([]string, 0, len(ov.Fixed))
	for k := range ov.Fixed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		line("fixed", k+"="+string(ov.Fixed[k]))
	}
	for _, k := range ov.Hidden {
		line("hidden", k)
	}
	return nil
}

// overrideLines are a node's overrides for `nerve node info`, one per
// tool in name order: "echo → say, fixed text, hidden mode, read-only".
func overrideLines(ovs map[string]api.ToolOverride) []string {
	tools := make([]string, 0, len(ovs))
	for t := range ovs {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	var out []string
	for _, t := range tools {
		ov := ovs[t]
		line := t
		if ov.Name != "" {
			line += " → " + ov.Name
		}
		var what []string
		if ov.Title != "" {
			what = append(what, "title")
		}
		if ov.Description != "" {
			what = append(what, "description")
		}
		for _, h := range []struct {
			k string
			v *bool
		}{{"read-only", ov.ReadOnly}, {"destructive", ov.Destructive}, {"idempotent", ov.Idempotent}, {"open-world", ov.OpenWorld}} {
			if h.v != nil {
				what = append(what, fmt.Sprintf("%s=%v", h.k, *h.v))
			}
		}
		fixed := make([]string, 0, len(ov.Fixed))
		for k := range ov.Fixed {
			fixed = append(fixed, k)
		}
		slices.Sort(fixed)
		for _, k := range fixed {
			what = append(what, "fixed "+k)
		}
		for _, k := range ov.Hidden {
			what = append(what, "hidden "+k)
		}
		if len(what) > 0 {
			line += " (" + strings.Join(what, ", ") + ")"
		}
		out = append(out, line)
	}
	return out
}
