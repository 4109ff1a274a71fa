package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// defaultMCPConfig is the file `nerve mcp import` reads when none is named:
// Claude Code's project config.
const defaultMCPConfig = ".mcp.json"

// importParallel bounds the servers started at once by an import.
const importParallel = 4

func mcpImportCmd() *Command {
	return &Command{
		Name:    "import",
		Summary: "add every server of an MCP config file as an mcp node",
		Usage:   "mcp import [FILE] [--dry-run]",
		Help: `FILE defaults to ./.mcp.json. Every format nerve reads is accepted: Claude
Desktop and Claude Code ("mcpServers"), Cursor, VS Code ("servers", or the
"mcp" object of settings.json), and a "servers" array.

Each server becomes an mcp node whose id is the server's name in lower
case, other characters than letters, digits, '_' and '-' made '-'; two
servers that map to the one id get -2, -3, … A server whose node fails
does not stop the others: each failure is reported and the exit code is 1.
A server already in the session with the same spec is skipped.
${VAR} references are saved as written and expanded when the node starts.

Examples:
  nerve mcp import
  nerve mcp import ~/.cursor/mcp.json --dry-run`,
		Flags: []*Flag{
			{Name: "dry-run", Usage: "show what would be added, add nothing"},
		},
		Run: runMCPImport,
	}
}

// withSub returns c with subs added to its subcommands.
func withSub(c *Command, subs ...*Command) *Command {
	c.Sub = append(c.Sub, subs...)
	return c
}

// importItem is one server of an import and what became of it.
type importItem struct {
	Server string     `json:"server"`
	Node   string     `json:"node"`
	Status string     `json:"status"` // "added", "failed", "skipped", "would add"
	Error  string     `json:"error,omitempty"`
	Info   *node.Info `json:"info,omitempty"`
	spec   node.Spec
}

func runMCPImport(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 1 {
		return usagef(inv, "`nerve mcp import` takes one FILE at most (got %d)", len(inv.Args))
	}
	file := defaultMCPConfig
	if len(inv.Args) == 1 {
		file = inv.Args[0]
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	cfg, err := mcpconf.Load(abs)
	// Servers written wrong are reported and the others imported: one bad
	// server does not stop the rest. A file that is not usable at all is.
	var bad *mcpconf.ServerErrors
	if err != nil && !errors.As(err, &bad) {
		return &UsageError{Msg: fmt.Sprintf("%v\nnothing was imported: fix the file and run `nerve mcp import %s` again", err, file)}
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(env.Stderr, "nerve: warning: %s\n", w)
	}
	badCount := 0
	if bad != nil {
		badCount = len(bad.Errs)
		for _, e := range bad.Errs {
			fmt.Fprintf(env.Stderr, "nerve: not imported: %v\n", e)
		}
	}
	if len(cfg.Servers) == 0 {
		fmt.Fprintf(env.Stderr, "%s has no usable servers: nothing to import\n", file)
		if badCount > 0 {
			return &UsageError{Msg: fmt.Sprintf("no server of %s could be read: fix them and run `nerve mcp import %s` again", file, file)}
		}
		return nil
	}
	items := planImport(cfg, filepath.Dir(abs))
	if inv.Bool("dry-run") {
		for i := range items {
			items[i].Status = "would add"
		}
		if env.JSON {
			return printJSON(env, items)
		}
		return writeImportPlan(env, items)
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	existing := map[string]bool{}
	if infos, err := s.Nodes(ctx); err == nil {
		for _, i := range infos {
			existing[i.ID] = true
		}
	} else if !errors.Is(err, client.ErrSessionNotFound) {
		return err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, importParallel)
	for i := range items {
		wg.Add(1)
		go func(it *importItem) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			importOne(ctx, s, it, existing[it.Node])
		}(&items[i])
	}
	wg.Wait()
	failed := 0
	for _, it := range items {
		if it.Status == "failed" {
			failed++
		}
	}
	if env.JSON {
		if err := printJSON(env, items); err != nil {
			return err
		}
	} else {
		for _, it := range items {
			name := it.Node
			if it.Server != it.Node {
				name = fmt.Sprintf("%s (server %q)", it.Node, it.Server)
			}
			switch it.Status {
			case "added":
				fmt.Fprintf(env.Stdout, "added %s: %s with %d tool%s\n", name, it.Info.State, it.Info.Tools, plural(it.Info.Tools))
			case "skipped":
				fmt.Fprintf(env.Stdout, "skipped %s: already in the session with the same spec\n", name)
			default:
				fmt.Fprintf(env.Stderr, "nerve: %s failed: %s\n", name, it.Error)
			}
		}
	}
	if failed += badCount; failed > 0 {
		// Not wrapped: the failures were nodes' (exit 1), whatever their cause.
		return fmt.Errorf("%d of %d servers of %s failed (see above); fix them and run `nerve mcp import %s` again: the others are skipped", failed, len(items)+badCount, file, file)
	}
	return nil
}

// planImport turns the servers of cfg into node specs, their ids made from
// the servers' names. Relative folders are relative to the config file's
// folder, where a server with none is started.
func planImport(cfg *mcpconf.Config, dir string) []importItem {
	used := map[string]bool{}
	items := make([]importItem, 0, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		id := uniqueID(nodeIDFromName(srv.Name), used)
		switch {
		case srv.Transport != "stdio":
		case srv.Cwd == "":
			srv.Cwd = dir
		case !filepath.IsAbs(srv.Cwd) && !strings.Contains(srv.Cwd, "${") && !strings.HasPrefix(srv.Cwd, "~"):
			srv.Cwd = filepath.Join(dir, srv.Cwd)
		}
		items = append(items, importItem{Server: srv.Name, Node: id, spec: srv.Spec(id)})
	}
	return items
}

// nodeIDFromName makes a node id of an MCP server's name: lower case,
// characters a node id cannot hold made '-', at most 63 characters.
func nodeIDFromName(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b = append(b, byte(r))
		default:
			b = append(b, '-')
		}
	}
	id := strings.TrimLeft(string(b), "-_")
	if len(id) > 63 {
		id = strings.TrimRight(id[:63], "-_")
	}
	if id == "" {
		id = "mcp"
	}
	return id
}

// uniqueID returns id, or id-2, id-3, … when id is taken, and marks it used.
func uniqueID(id string, used map[string]bool) string {
	out := id
	for n := 2; used[out]; n++ {
		suffix := fmt.Sprintf("-%d", n)
		out = id[:min(len(id), 63-len(suffix))] + suffix
	}
	used[out] = true
	return out
}

// importOne adds one server's node, or skips it when the session already
// has the same spec.
func importOne(ctx context.Context, s *client.Session, it *importItem, exists bool) {
	if exists {
		d, err := s.Node(ctx, it.Node)
		switch {
		case err != nil:
			it.Status, it.Error = "failed", err.Error()
		case sameSpec(d.Spec, it.spec) && d.Info.State == node.Error:
			it.Status, it.Info = "failed", &d.Info
			it.Error = fmt.Sprintf("node %q is already in the session, in ERROR: %s; fix it and `nerve node restart %s`", it.Node, firstLine(d.Info.Error), it.Node)
		case sameSpec(d.Spec, it.spec):
			it.Status, it.Info = "skipped", &d.Info
		default:
			it.Status = "failed"
			it.Error = fmt.Sprintf("the session already has a node %q with another spec; remove it with `nerve node rm %s`, or rename the server", it.Node, it.Node)
		}
		return
	}
	info, err := s.Add(ctx, it.spec)
	if err != nil {
		it.Status, it.Error = "failed", err.Error()
		var ce *client.Error
		if errors.As(err, &ce) && ce.Node != nil {
			it.Info = ce.Node
		}
		return
	}
	it.Status, it.Info = "added", &info
}

// sameSpec compares what a person wrote of two specs (not their state).
func sameSpec(a, b node.Spec) bool {
	var oa, ob any
	_ = json.Unmarshal(a.Options, &oa)
	_ = json.Unmarshal(b.Options, &ob)
	return a.Kind == b.Kind && reflect.DeepEqual(a.Command, b.Command) && a.Cwd == b.Cwd &&
		len(a.Env) == len(b.Env) && (len(a.Env) == 0 || reflect.DeepEqual(a.Env, b.Env)) && reflect.DeepEqual(oa, ob)
}

func writeImportPlan(env *Env, items []importItem) error {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tNODE\tTRANSPORT\tRUNS")
	for _, it := range items {
		srv, _, err := mcpconf.ServerFromSpec(it.spec)
		if err != nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t%v\n", it.Server, it.Node, err)
			continue
		}
		runs := srv.URL
		if srv.Transport == "stdio" {
			runs = strings.Join(srv.Command, " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Server, it.Node, srv.Transport, runs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "dry run: nothing was added; run without --dry-run to add %d node%s\n", len(items), plural(len(items)))
	return nil
}
