package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

func nodeCmd() *Command {
	return &Command{
		Name:    "node",
		Summary: "add, list, inspect, stop, start, remove and restart nodes",
		Usage:   "node COMMAND",
		Sub: []*Command{
			nodeAddCmd(), // node_add.go
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the session's nodes", Usage: "node ls", Run: runNodeLs},
			{Name: "info", Summary: "show a node's state, error, counters and spec", Usage: "node info NAME", Complete: "node", Run: runNodeInfo},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "stop a node and remove it", Usage: "node rm NAME...", Complete: "node", Run: runNodeRm},
			nodeAuthCmd(),  // node_auth.go
			nodeStopCmd(),  // node_stop.go
			nodeStartCmd(), // node_stop.go
			{Name: "restart", Summary: "stop a node (from any state, ERROR too) and start it again", Usage: "node restart NAME", Complete: "node", Run: runNodeRestart},
			{Name: "reset", Summary: "make a node forget its conversation (llm)", Usage: "node reset NAME", Complete: "node", Run: runNodeReset},
			{Name: "interrupt", Summary: "cancel what a node is doing; it stays usable", Usage: "node interrupt NAME", Complete: "node", Run: runNodeInterrupt},
			{Name: "sync", Summary: "refresh mcp nodes' tool catalogues (starting and stopping a node that is not running)", Usage: "node sync NAME... | --all", Complete: "node", Run: runNodeSync,
				Flags: []*Flag{{Name: "all", Usage: "every mcp node of the session"}}},
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
	enc.SetEscapeHTML(false) // a person reads `a > b`, not `a \u003e b`
	return enc.Encode(v)
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
	// By name: the session's order is the order nodes were added in, which
	// a parallel import or restore makes arbitrary.
	slices.SortFunc(infos, func(a, b node.Info) int { return strings.Compare(a.ID, b.ID) })
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
	color := colorWanted(env)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\tKIND\t%s\tTOOLS\tCALLS\tRUNNING\tDETAIL\n", stateCell("STATE", "", color))
	for _, i := range infos {
		detail := i.Summary
		if i.Error != "" {
			detail = "error: " + firstLine(i.Error)
		}
		// A node that is not running but knows its tools (its catalogue):
		// its first call starts it.
		if lazy, _ := i.Details["lazy"].(bool); lazy {
			detail = "lazy, tools cached: starts on its first call · " + detail
		} else if cached, _ := i.Details["cached"].(bool); cached && i.Error == "" {
			detail = "tools cached · " + detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", i.ID, i.Kind, stateCell(i.State.String(), i.State.String(), color), i.Tools, i.Calls, i.InFlight, detail)
	}
	return tw.Flush()
}

// stateColors colour a state by what it asks of the person: green is
// usable, yellow is on the way, red needs them.
var stateColors = map[string]string{
	"READY": "\x1b[32m", "BUSY": "\x1b[36m", "STARTING": "\x1b[33m", "STOPPING": "\x1b[33m",
	"CREATED": "\x1b[37m", "STOPPED": "\x1b[37m", "ERROR": "\x1b[31m",
}

// stateCell is a table cell holding text in the colour of state. Every
// cell of the column, the header too, carries sequences of the same length
// so tabwriter, which counts them as text, still aligns the column.
func stateCell(text, state string, color bool) string {
	if !color {
		return text
	}
	seq, ok := stateColors[state]
	if !ok {
		seq = "\x1b[39m" // the default colour, as long as the others
	}
	return seq + text + "\x1b[0m"
}

// oneNodeSession is the start of every command on one node: its one NAME
// argument and the session it is in.
func oneNodeSession(ctx context.Context, env *Env, inv *Invocation) (string, *client.Session, error) {
	if len(inv.Args) != 1 {
		return "", nil, usagef(inv, "`nerve %s` needs one NAME", strings.Join(inv.Path, " "))
	}
	s, err := env.session(ctx)
	if err != nil {
		return "", nil, err
	}
	return inv.Args[0], s, nil
}

func runNodeInfo(ctx context.Context, env *Env, inv *Invocation) error {
	id, s, err := oneNodeSession(ctx, env, inv)
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
	// Maps in key order: the same node prints the same lines every time.
	for _, k := range slices.Sorted(maps.Keys(d.Spec.Env)) {
		fmt.Fprintf(tw, "env\t%s=%s\n", k, d.Spec.Env[k])
	}
	if len(d.Spec.Options) > 0 {
		fmt.Fprintf(tw, "options\t%s\n", d.Spec.Options)
	}
	for _, line := range overrideLines(d.Spec.Overrides) { // tool.go
		fmt.Fprintf(tw, "override\t%s\n", line)
	}
	for _, k := range slices.Sorted(maps.Keys(i.Details)) {
		v := detailText(i.Details[k])
		if k == "cwd" && v == d.Spec.Cwd {
			continue // said above
		}
		fmt.Fprintf(tw, "%s\t%s\n", k, v)
	}
	return tw.Flush()
}

// detailText is a value of a node's Details as a person reads it: a number
// as written (JSON numbers arrive as float64: 1048576, not
// 1.048576e+06), a list or an object as JSON, anything else as it is.
func detailText(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
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
	id, s, err := oneNodeSession(ctx, env, inv)
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
	id, s, err := oneNodeSession(ctx, env, inv)
	if err != nil {
		return err
	}
	// The daemon answers with the node's info as it was when told (a
	// daemon before that answers {}).
	var info node.Info
	if err := s.Do(ctx, http.MethodPost, client.NodePath(id)+"/interrupt", nil, &info); err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	switch {
	case info.ID == "":
		fmt.Fprintf(env.Stdout, "told %s to stop what it is doing\n", id)
	case info.InFlight == 0:
		fmt.Fprintf(env.Stdout, "nothing to interrupt: %s has no call in flight (%s)\n", id, info.State)
	case info.InFlight == 1:
		fmt.Fprintf(env.Stdout, "interrupted %s: its call in flight was told to stop\n", id)
	default:
		fmt.Fprintf(env.Stdout, "interrupted %s: its %d calls in flight were told to stop\n", id, info.InFlight)
	}
	return nil
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

func runNodeReset(ctx context.Context, env *Env, inv *Invocation) error {
	id, s, err := oneNodeSession(ctx, env, inv)
	if err != nil {
		return err
	}
	info, err := s.Reset(ctx, id)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stdout, "%s forgot its conversation\n", info.ID)
	return nil
}

// kindMCP is the kind whose nodes `nerve node sync --all` refreshes: the
// nodes whose tools come from a server.
const kindMCP = "mcp"

func runNodeSync(ctx context.Context, env *Env, inv *Invocation) error {
	all := inv.Bool("all")
	if all == (len(inv.Args) > 0) {
		return usagef(inv, "`nerve node sync` takes node names or --all (one of them)")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	ids := inv.Args
	if all {
		infos, err := s.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, i := range infos {
			if i.Kind == kindMCP {
				ids = append(ids, i.ID)
			}
		}
	}
	failed, usage := 0, 0
	for _, id := range ids {
		info, err := s.Sync(ctx, id)
		if err != nil {
			fmt.Fprintf(env.Stderr, "nerve: %s: %v\n", id, err)
			failed++
			if Code(err) == ExitUsage {
				usage++
			}
			continue
		}
		fmt.Fprintf(env.Stdout, "synced %s: %d tool%s (%s)\n", id, info.Tools, plural(info.Tools), info.State)
	}
	if failed > 0 && failed == usage {
		// Every failure was the caller's (no such node, not an mcp node).
		return &UsageError{Msg: fmt.Sprintf("%d of %d nodes could not be synced (see above)", failed, len(ids))}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d nodes could not be synced (see above)", failed, len(ids))
	}
	return nil
}
