package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/nerve-dev/nerve/internal/clientconf"
	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/envfile"
	"github.com/nerve-dev/nerve/internal/repl"
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
		Usage:   "mcp import [FILE] [--dry-run] [--sync] [--watch]",
		Help: `FILE defaults to ./.mcp.json; with neither, the command lists the configs
of Claude Code, Claude Desktop, Cursor and VS Code it finds in their usual
places. Every format nerve reads is accepted: Claude
Desktop and Claude Code ("mcpServers"), Cursor, VS Code ("servers", or the
"mcp" object of settings.json), and a "servers" array.

Each server becomes an mcp node whose id is the server's name in lower
case, other characters than letters, digits, '_' and '-' made '-'; two
servers that map to the one id get -2, -3, … A server whose node fails
does not stop the others: each failure is reported and the exit code is 1.
A server already in the session with the same spec is skipped, and so is
nerve itself (nerve mcp serve, or this daemon's MCP URL). --dry-run warns
of unset ${VAR}s and exits 1 when a server would not be imported.
${VAR} references are saved as written and expanded when the node starts.

--watch stays in the foreground after the import and applies each change
of FILE to the session, with the same refusals and warnings: a server
added to the file becomes a node, one removed from it is removed (only
nodes imported from FILE), one whose entry changed is replaced. A file
that cannot be read, or has servers written wrong, removes nothing until
it is fixed. Ctrl-C stops watching; the nodes stay.

Examples:
  nerve mcp import
  nerve mcp import ~/.cursor/mcp.json --dry-run
  nerve mcp import --watch .mcp.json`,
		Flags: []*Flag{
			{Name: "dry-run", Usage: "show what would be added, add nothing"},
			{Name: "sync", Usage: "refresh each imported node's tool catalogue (nerve node sync) once it is added"},
			{Name: "watch", Usage: "stay in the foreground and apply each change of FILE: new servers added, removed ones removed, changed ones replaced (mcp_watch.go)"},
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
	Status string     `json:"status"` // "added", "replaced", "failed", "skipped", "would add", "nerve itself"
	Error  string     `json:"error,omitempty"`
	Info   *node.Info `json:"info,omitempty"`
	spec   node.Spec
	srv    *clientconf.Server
}

func runMCPImport(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 1 {
		return usagef(inv, "`nerve mcp import` takes one FILE at most (got %d)", len(inv.Args))
	}
	file := defaultMCPConfig
	if len(inv.Args) == 1 {
		file = inv.Args[0]
	} else if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return noDefaultConfig(env, inv)
	}
	watch := inv.Bool("watch")
	switch {
	case watch && inv.Bool("dry-run"):
		return usagef(inv, "--watch applies each change of the file; --dry-run applies nothing: give one of them")
	case watch && repl.Asker(ctx) != nil:
		// The Commander would wait on the watch with no way to end it.
		return usagef(inv, "--watch runs in the foreground until Ctrl-C: run `nerve mcp import --watch %s` in a terminal of its own, not in the Commander", file)
	}
	im, err := readImport(env, file)
	if err != nil || im == nil && !watch {
		return err
	}
	if inv.Bool("dry-run") {
		return im.dryRun()
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	if im != nil {
		if err := im.add(ctx, s); err != nil {
			return err
		}
		if inv.Bool("sync") {
			im.sync(ctx, s)
		}
		err = im.report()
	}
	if !watch {
		return err
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "nerve: %v\n", err)
	}
	return watchImport(ctx, env, s, file) // mcp_watch.go
}

// mcpImport is one `nerve mcp import` of a file: its servers and what
// became of each.
type mcpImport struct {
	env   *Env
	file  string // as the person named it
	bad   int    // servers of the file written wrong, not imported
	items []importItem
}

// readImport reads file and plans the import of its usable servers,
// reporting the file's warnings and the servers written wrong. It returns
// nil, and no error, when there is nothing to import.
func readImport(env *Env, file string) (*mcpImport, error) {
	// Servers written wrong are reported and the others imported: one bad
	// server does not stop the rest. A file that is not usable at all is.
	cfg, err := clientconf.Load(file)
	if err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("%v\nnothing was imported: fix the file and run `nerve mcp import %s` again", err, file)}
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(env.Stderr, "nerve: warning: %s\n", w)
	}
	im := &mcpImport{env: env, file: file, bad: len(cfg.Bad)}
	for _, e := range cfg.Bad {
		fmt.Fprintf(env.Stderr, "nerve: not imported: %v\n", e)
	}
	if len(cfg.Servers) == 0 {
		fmt.Fprintf(env.Stderr, "%s has no usable servers: nothing to import\n", file)
		if im.bad > 0 {
			return nil, &UsageError{Msg: fmt.Sprintf("no server of %s could be read: fix them and run `nerve mcp import %s` again", file, file)}
		}
		return nil, nil
	}
	for i := range cfg.Servers {
		srv := &cfg.Servers[i]
		im.items = append(im.items, importItem{Server: srv.Name, Node: srv.Node, spec: srv.Spec, srv: srv})
	}
	return im, nil
}

// dryRun shows what the import would add, and warns of what would go
// wrong, without adding anything.
func (im *mcpImport) dryRun() error {
	env, items := im.env, im.items
	markNerveItself(items, "")
	for i := range items {
		if items[i].Status == "" {
			items[i].Status = "would add"
		}
		warnUnset(env, &items[i], im.file)
		noteShellOnly(env, &items[i])
	}
	if env.JSON {
		if err := printJSON(env, items); err != nil {
			return err
		}
	} else if err := writeImportPlan(env, items); err != nil {
		return err
	}
	if im.bad > 0 {
		return fmt.Errorf("%d of %d servers of %s would not be imported (see above): fix them before you import", im.bad, len(items)+im.bad, im.file)
	}
	return nil
}

// add adds the servers to session s, importParallel at a time, except
// nerve itself; a node with the same spec already there is skipped.
func (im *mcpImport) add(ctx context.Context, s *client.Session) error {
	items := im.items
	own := ""
	if ep, err := s.MCPEndpoint(ctx); err == nil {
		own = ep.URL
	}
	markNerveItself(items, own)
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
		if items[i].Status == statusNerve {
			continue
		}
		wg.Add(1)
		go func(it *importItem) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			importOne(ctx, s, it, existing[it.Node])
		}(&items[i])
	}
	wg.Wait()
	for i := range items {
		if items[i].Status == "added" || items[i].Status == "replaced" {
			noteShellOnly(im.env, &items[i])
		}
	}
	return nil
}

// sync refreshes the tool catalogue of each node added or already there.
func (im *mcpImport) sync(ctx context.Context, s *client.Session) {
	for i := range im.items {
		it := &im.items[i]
		if it.Status != "added" && it.Status != "replaced" && it.Status != "skipped" {
			continue
		}
		if info, err := s.Sync(ctx, it.Node); err != nil {
			fmt.Fprintf(im.env.Stderr, "nerve: syncing %s: %v\n", it.Node, err)
		} else {
			it.Info = &info
		}
	}
}

// report prints what became of each server and fails if any did.
func (im *mcpImport) report() error {
	env := im.env
	failed := 0
	for _, it := range im.items {
		if it.Status == "failed" {
			failed++
		}
	}
	if env.JSON {
		if err := printJSON(env, im.items); err != nil {
			return err
		}
	} else {
		for _, it := range im.items {
			printImported(env, &it)
		}
	}
	if failed += im.bad; failed > 0 {
		// Not wrapped: the failures were nodes' (exit 1), whatever their cause.
		return fmt.Errorf("%d of %d servers of %s failed (see above); fix them and run `nerve mcp import %s` again: the others are skipped", failed, len(im.items)+im.bad, im.file, im.file)
	}
	return nil
}

// printImported says what became of one server: on stdout if it is in the
// session, on stderr if not.
func printImported(env *Env, it *importItem) {
	name := it.Node
	if it.Server != it.Node {
		name = fmt.Sprintf("%s (server %q)", it.Node, it.Server)
	}
	switch it.Status {
	case "added":
		if it.spec.Stopped {
			fmt.Fprintf(env.Stdout, "added %s: %s, as the file disables it (`nerve node start %s` starts it)\n", name, it.Info.State, it.Node)
			return
		}
		fmt.Fprintf(env.Stdout, "added %s: %s with %d tool%s\n", name, it.Info.State, it.Info.Tools, plural(it.Info.Tools))
	case "replaced":
		fmt.Fprintf(env.Stdout, "replaced %s, which had failed: %s with %d tool%s\n", name, it.Info.State, it.Info.Tools, plural(it.Info.Tools))
	case "skipped":
		fmt.Fprintf(env.Stdout, "skipped %s: already in the session with the same spec\n", name)
	case statusNerve:
		fmt.Fprintf(env.Stderr, "nerve: skipped %s: %s\n", name, it.Error)
	default:
		fmt.Fprintf(env.Stderr, "nerve: %s failed: %s\n", name, it.Error)
	}
}

// statusNerve is the status of a server that is nerve's own MCP server.
const statusNerve = "nerve itself"

// markNerveItself marks the servers that are nerve's own MCP server — a
// command running `nerve mcp serve`, or a URL on this daemon's MCP
// endpoint (own, if known) — so they are skipped: a session that contains
// nerve would list its own tools again under a new prefix, without end.
// The docs tell people both to put `nerve mcp serve` in their clients'
// configs and to import those configs.
func markNerveItself(items []importItem, own string) {
	self, _ := selfExe()
	for i := range items {
		if why := items[i].srv.Nerve(self, own); why != "" {
			items[i].Status = statusNerve
			items[i].Error = why + ": a session cannot contain nerve itself (its tools would include their own copies without end)"
		}
	}
}

// importOne adds one server's node, or skips it when the session already
// has the same spec.
func importOne(ctx context.Context, s *client.Session, it *importItem, exists bool) {
	if exists {
		d, tag, err := s.NodeTag(ctx, it.Node)
		switch {
		case err != nil:
			it.Status, it.Error = "failed", err.Error()
		case sameSpec(d.Spec, it.spec) && d.Info.State == node.Error:
			it.Status, it.Info = "failed", &d.Info
			it.Error = fmt.Sprintf("node %q is already in the session, in ERROR: %s; fix it and `nerve node restart %s`", it.Node, firstLine(d.Info.Error), it.Node)
		case sameSpec(d.Spec, it.spec):
			it.Status, it.Info = "skipped", &d.Info
		case d.Info.State == node.Error && d.Spec.Kind == it.spec.Kind:
			// The server failed and the file was fixed: the import run
			// again puts the fixed spec in the failed node's place
			// (docs/cli.md), if nobody changed the node meanwhile.
			replaceFailed(ctx, s, it, tag)
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

// replaceFailed puts it's spec in the place of its node, which is in
// ERROR with another spec and was read with tag.
func replaceFailed(ctx context.Context, s *client.Session, it *importItem, tag string) {
	r, _, err := s.ReplaceIf(ctx, it.spec, tag)
	if err != nil {
		it.Status, it.Error = "failed", err.Error()
		var ce *client.Error
		if errors.As(err, &ce) && ce.Node != nil {
			it.Info = ce.Node
		}
		return
	}
	it.Status, it.Info = "replaced", &r.Info
}

// sameSpec compares what a person wrote of two specs (not their state,
// nor where they were read).
func sameSpec(a, b node.Spec) bool {
	var oa, ob map[string]any
	_ = json.Unmarshal(a.Options, &oa)
	_ = json.Unmarshal(b.Options, &ob)
	// Where the server was read is no part of what it is: a server that
	// moved down its file is the same server.
	delete(oa, "source")
	delete(ob, "source")
	return a.Kind == b.Kind && reflect.DeepEqual(a.Command, b.Command) && a.Cwd == b.Cwd &&
		len(a.Env) == len(b.Env) && (len(a.Env) == 0 || reflect.DeepEqual(a.Env, b.Env)) && reflect.DeepEqual(oa, ob)
}

// warnUnset warns when a server refers to a variable that is not set in
// this environment: the node would fail to start.
func warnUnset(env *Env, it *importItem, file string) {
	if r, _ := env.remote(); r != nil {
		return // a daemon through ssh never sees this environment (docs/remote.md)
	}
	lookup := func(k string) (string, bool) {
		if name, ok := strings.CutPrefix(k, node.SecretPrefix); ok {
			// ${keychain:NAME}: in nerve's secrets, not this environment;
			// a daemon elsewhere has its own, which only it can read.
			if r, _ := env.remote(); r != nil {
				return "set", true
			}
			if secrets, err := openLocalSecrets(env); err == nil {
				if _, err := secrets.Get(name); err == nil {
					return "set", true
				}
			}
			return "", false
		}
		v := env.getenv(k)
		return v, v != ""
	}
	if err := it.srv.Expand(lookup, file); err != nil {
		fmt.Fprintf(env.Stderr, "nerve: warning: %v (node %s would fail to start until it is set)\n", err, it.Node)
	}
}

// noteShellOnly says when a server's ${VAR} is set in this shell but not in
// nerve's env file: the node has it now (a request carries the client's
// environment), but a daemon that restarts will not, and the node would
// fail to start then. It offers to keep it with `nerve env set`.
func noteShellOnly(env *Env, it *importItem) {
	if r, _ := env.remote(); r != nil {
		return
	}
	kept := map[string]bool{}
	if p, err := env.paths(); err == nil {
		path := daemon.EnvFile(p)
		if es, err := envfile.Load(path); err == nil {
			for _, e := range es {
				kept[e.Key] = true
			}
		}
	}
	var shellOnly []string
	lookup := func(k string) (string, bool) {
		v := env.getenv(k)
		if v != "" && !kept[k] && !slices.Contains(shellOnly, k) {
			shellOnly = append(shellOnly, k)
		}
		return v, v != ""
	}
	_ = it.srv.Expand(lookup, "")
	for _, k := range shellOnly {
		fmt.Fprintf(env.Stderr, "nerve: note: ${%s} of node %s comes from this shell only; a restarted daemon will not have it: keep it with `nerve env set %s=…`\n", k, it.Node, k)
	}
}

// noDefaultConfig answers `nerve mcp import` run where there is no
// ./.mcp.json: it lists the config files found in the usual places, to
// import with `nerve mcp import FILE`.
func noDefaultConfig(env *Env, inv *Invocation) error {
	home, _ := os.UserHomeDir()
	var found []string
	for _, p := range clientconf.Places(home, runtime.GOOS, env.getenv("APPDATA")) {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		what := ""
		if cfg, err := clientconf.Load(p); err != nil {
			what = "cannot be read: " + firstLine(err.Error())
		} else {
			what = fmt.Sprintf("%d server%s", len(cfg.Servers), plural(len(cfg.Servers)))
		}
		found = append(found, fmt.Sprintf("  nerve mcp import %s    (%s)", shellQuote(p), what))
	}
	if len(found) == 0 {
		return usagef(inv, "there is no ./.mcp.json here, nor a config file of Claude Code, Claude Desktop, Cursor or VS Code in the usual places; name one: `nerve mcp import FILE`")
	}
	return usagef(inv, "there is no ./.mcp.json here; MCP configs found:\n%s", strings.Join(found, "\n"))
}

func writeImportPlan(env *Env, items []importItem) error {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tNODE\tTRANSPORT\tRUNS")
	adds := 0
	for _, it := range items {
		if it.Status == statusNerve {
			fmt.Fprintf(env.Stderr, "nerve: would skip %s: %s\n", it.Node, it.Error)
			continue
		}
		adds++
		runs := it.srv.Runs()
		if it.spec.Stopped {
			runs += "  (disabled: added stopped)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Server, it.Node, it.srv.Transport(), runs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "dry run: nothing was added; run without --dry-run to add %d node%s\n", adds, plural(adds))
	return nil
}
