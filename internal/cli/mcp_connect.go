package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/internal/clientconf"
)

// connectEntry is the name of nerve's entry in a client's config.
const connectEntry = "nerve"

func mcpConnectCmd() *Command {
	return &Command{
		Name:    "connect",
		Summary: "add `nerve mcp serve` to an MCP client's user config (backup, diff); --move hands its servers to nerve",
		Usage:   "mcp connect claude-code|claude-desktop|vscode|cursor [--dry-run] [--move]",
		Help: `Writes the "nerve" server — this nerve binary with "mcp serve", and
--session when one is chosen — into the client's user-scope config:

  claude-code     ~/.claude.json ("mcpServers")
  claude-desktop  Claude Desktop's claude_desktop_config.json ("mcpServers")
  vscode          VS Code's user mcp.json ("servers")
  cursor          ~/.cursor/mcp.json ("mcpServers")

The file is backed up beside itself (FILE.nerve-backup-TIME) and the
change is shown as a diff; everything else in it is kept, comments and
trailing commas included. Running it again changes nothing. A nerve run
by ` + "`go run`" + ` or from a temp folder is refused: install it first
(` + "`CGO_ENABLED=0 go install github.com/nerve-dev/nerve/cmd/nerve@latest`" + `).

--move also imports the client's other servers into nerve (as
` + "`nerve mcp import`" + ` does) and removes from the client those nerve now
runs, so every client shares one set of server processes; a server that
cannot move stays in the client, and the command exits 1. --dry-run shows
the diff and writes nothing. Restart the client afterwards.

Examples:
  nerve mcp connect claude-code --dry-run
  nerve mcp connect cursor --move`,
		Flags: []*Flag{
			{Name: "dry-run", Usage: "show the change, write nothing"},
			{Name: "move", Usage: "also import the client's servers into nerve and remove them from the client"},
		},
		Run: runMCPConnect,
	}
}

func runMCPConnect(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 || !slices.Contains(clientconf.Clients, inv.Args[0]) {
		return usagef(inv, "`nerve mcp connect` needs one client: %s", strings.Join(clientconf.Clients, ", "))
	}
	client := inv.Args[0]
	home := env.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("finding your home folder: %w (set HOME)", err)
		}
		home = h
	}
	path, key := clientconf.Path(client, home, runtime.GOOS, env.getenv("APPDATA"))
	self, err := selfExe()
	if err != nil {
		return fmt.Errorf("finding the nerve binary to put in the config: %w", err)
	}
	if why := clientconf.Unstable(self, env.getenv); why != "" {
		return fmt.Errorf("not connecting %s: %s; %s, and connect again with it; nothing was changed", client, why, clientconf.InstallHint)
	}
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s's config: %w", client, err)
	}
	args := []string{"mcp", "serve"}
	if r, err := env.remote(); err != nil {
		return err
	} else if r != nil {
		// The client reaches the same daemon, whatever context is current
		// when it starts nerve.
		args = append([]string{"-H", r.String()}, args...)
	}
	if env.Session != "" {
		args = append(args, "--session", env.Session)
	}
	entry := clientconf.Entry{Command: self, Args: args}
	if client == "vscode" || client == "claude-code" {
		entry.Type = "stdio" // their own entries say it
	}
	// The file must be one nerve can edit before anything moves.
	if _, err := clientconf.SetEntry(path, old, key, connectEntry, entry, nil); err != nil {
		return connectError(err, entry)
	}

	// --move: the client's own servers become nerve's nodes first; only
	// those nerve now has leave the client.
	var remove []string
	var notMoved error
	if inv.Bool("move") && exists {
		var failed int
		remove, failed, err = moveServers(ctx, env, inv, path, old)
		if err != nil {
			return err
		}
		if failed > 0 {
			// Not wrapped: the servers' own failures (exit 1).
			notMoved = fmt.Errorf("%d server%s of %s not moved (see above): they stay in %s; fix them and run `nerve mcp connect %s --move` again",
				failed, plural(failed), path, client, client)
		}
	}
	updated, err := clientconf.SetEntry(path, old, key, connectEntry, entry, remove)
	if err != nil {
		return connectError(err, entry)
	}
	if exists && bytes.Equal(updated, old) {
		fmt.Fprintf(env.Stderr, "%s is already connected to nerve (%s): nothing to change\n", client, path)
		return notMoved
	}
	clientconf.Diff(env.Stdout, path, old, updated)
	if inv.Bool("dry-run") {
		fmt.Fprintf(env.Stderr, "dry run: %s was not changed\n", path)
		return notMoved
	}
	backup, err := clientconf.Write(path, old, updated, exists)
	if backup != "" {
		fmt.Fprintf(env.Stderr, "backed up %s to %s\n", path, backup)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "connected %s to nerve in %s; restart %s to use it\n", client, path, client)
	return notMoved
}

// connectError is the error of a config file nerve cannot edit: where it
// is wrong, and the entry to add by hand.
func connectError(err error, entry clientconf.Entry) error {
	b, _ := json.Marshal(entry)
	return fmt.Errorf("%w; nothing was changed (fix the file, or add the entry by hand: %q: %s)", err, connectEntry, b)
}

// moveServers imports the servers of the client's config into nerve and
// returns the names of those nerve now has (added, or there already with
// the same spec), which leave the client, and how many could not move. A node added for a server that then failed
// is removed again: that server stays the client's. nerve's own entry
// stays.
func moveServers(ctx context.Context, env *Env, inv *Invocation, path string, data []byte) (moved []string, failed int, err error) {
	cfg, err := clientconf.Parse(path, data)
	if err != nil {
		return nil, 0, fmt.Errorf("--move: %w; nothing was changed", err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(env.Stderr, "nerve: warning: %s\n", w)
	}
	for _, e := range cfg.Bad {
		fmt.Fprintf(env.Stderr, "nerve: not moved (it stays in the client): %v\n", e)
	}
	failed = len(cfg.Bad)
	self, _ := selfExe()
	var items []importItem
	for i := range cfg.Servers {
		srv := &cfg.Servers[i]
		if srv.Name == connectEntry || srv.Nerve(self, "") != "" {
			continue
		}
		items = append(items, importItem{Server: srv.Name, Node: srv.Node, spec: srv.Spec})
	}
	if inv.Bool("dry-run") {
		for _, it := range items {
			moved = append(moved, it.Server)
			fmt.Fprintf(env.Stderr, "would move %s to nerve as node %s\n", it.Server, it.Node)
		}
		return moved, failed, nil
	}
	s, err := env.session(ctx)
	if err != nil {
		return nil, 0, err
	}
	existing := map[string]bool{}
	if infos, err := s.Nodes(ctx); err == nil {
		for _, i := range infos {
			existing[i.ID] = true
		}
	}
	for i := range items {
		it := &items[i]
		importOne(ctx, s, it, existing[it.Node])
		switch it.Status {
		case "added", "skipped":
			moved = append(moved, it.Server)
			fmt.Fprintf(env.Stderr, "moved %s to nerve as node %s\n", it.Server, it.Node)
			continue
		}
		fmt.Fprintf(env.Stderr, "nerve: %s not moved (it stays in the client): %s\n", it.Server, it.Error)
		failed++
		if !existing[it.Node] && it.Info != nil {
			// Added, then failed to start: the client keeps the server,
			// so the session does not keep a node in ERROR for it.
			if err := s.Remove(ctx, it.Node); err != nil {
				fmt.Fprintf(env.Stderr, "nerve: removing node %s, which did not start: %v\n", it.Node, err)
			}
		}
	}
	return moved, failed, nil
}
