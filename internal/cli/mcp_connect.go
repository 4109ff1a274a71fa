package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/internal/mcpconf"
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
change is shown as a diff; everything else in it is kept. Running it again
changes nothing. --move also imports the client's other servers into nerve
(as ` + "`nerve mcp import`" + ` does) and removes from the client those nerve
now runs, so every client shares one set of server processes. --dry-run
shows the diff and writes nothing. Restart the client afterwards.

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

// connectClients are the clients `mcp connect` knows, in help order.
var connectClients = []string{"claude-code", "claude-desktop", "vscode", "cursor"}

// clientConfig returns the user-scope config file of client and the key
// of its servers object.
func clientConfig(client, home, goos, appData string) (path, key string) {
	switch client {
	case "claude-code":
		return filepath.Join(home, ".claude.json"), "mcpServers"
	case "cursor":
		return filepath.Join(home, ".cursor", "mcp.json"), "mcpServers"
	case "claude-desktop":
		switch goos {
		case "darwin":
			return filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"), "mcpServers"
		case "windows":
			return filepath.Join(appData, "Claude", "claude_desktop_config.json"), "mcpServers"
		}
		return filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"), "mcpServers"
	case "vscode":
		switch goos {
		case "darwin":
			return filepath.Join(home, "Library", "Application Support", "Code", "User", "mcp.json"), "servers"
		case "windows":
			return filepath.Join(appData, "Code", "User", "mcp.json"), "servers"
		}
		return filepath.Join(home, ".config", "Code", "User", "mcp.json"), "servers"
	}
	return "", ""
}

func runMCPConnect(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 1 || !slices.Contains(connectClients, inv.Args[0]) {
		return usagef(inv, "`nerve mcp connect` needs one client: %s", strings.Join(connectClients, ", "))
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
	path, key := clientConfig(client, home, runtime.GOOS, env.getenv("APPDATA"))
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s's config: %w", client, err)
	}
	self, err := selfExe()
	if err != nil {
		return fmt.Errorf("finding the nerve binary to put in the config: %w", err)
	}
	args := []string{"mcp", "serve"}
	if env.Session != "" {
		args = append(args, "--session", env.Session)
	}
	entry := connectServer{Command: self, Args: args}
	if client == "vscode" || client == "claude-code" {
		entry.Type = "stdio" // their own entries say it
	}

	// --move: the client's own servers become nerve's nodes first; only
	// those nerve now has leave the client.
	var remove []string
	if inv.Bool("move") && exists {
		remove, err = moveServers(ctx, env, inv, path, old)
		if err != nil {
			return err
		}
	}
	updated, err := setServerEntry(old, key, connectEntry, entry, remove)
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was changed (add the entry by hand: %q: %s)", path, err, connectEntry, mustJSON(entry))
	}
	if exists && bytes.Equal(updated, old) {
		fmt.Fprintf(env.Stderr, "%s is already connected to nerve (%s): nothing to change\n", client, path)
		return nil
	}
	writeDiff(env.Stdout, path, old, updated)
	if inv.Bool("dry-run") {
		fmt.Fprintf(env.Stderr, "dry run: %s was not changed\n", path)
		return nil
	}
	if exists {
		backup := path + ".nerve-backup-" + time.Now().UTC().Format("20060102T150405Z")
		if err := atomicfile.Write(backup, old, 0o600); err != nil {
			return fmt.Errorf("backing up %s: %w; nothing was changed", path, err)
		}
		fmt.Fprintf(env.Stderr, "backed up %s to %s\n", path, backup)
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s's config folder: %w", client, err)
	}
	perm := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, updated, perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(env.Stderr, "connected %s to nerve in %s; restart %s to use it\n", client, path, client)
	return nil
}

// moveServers imports the servers of the client's config into nerve and
// returns the names of those nerve now has (added, or there already with
// the same spec), which leave the client. nerve's own entry stays.
func moveServers(ctx context.Context, env *Env, inv *Invocation, path string, data []byte) ([]string, error) {
	cfg, err := mcpconf.Parse(path, data)
	var bad *mcpconf.ServerErrors
	if err != nil && !errors.As(err, &bad) {
		return nil, fmt.Errorf("--move: %w; nothing was changed", err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(env.Stderr, "nerve: warning: %s\n", w)
	}
	if bad != nil {
		for _, e := range bad.Errs {
			fmt.Fprintf(env.Stderr, "nerve: not moved (it stays in the client): %v\n", e)
		}
	}
	items := planImport(cfg, filepath.Dir(path))
	markNerveItself(items, "")
	if inv.Bool("dry-run") {
		var names []string
		for _, it := range items {
			if it.Status != statusNerve && it.Server != connectEntry {
				names = append(names, it.Server)
				fmt.Fprintf(env.Stderr, "would move %s to nerve as node %s\n", it.Server, it.Node)
			}
		}
		return names, nil
	}
	s, err := env.session(ctx)
	if err != nil {
		return nil, err
	}
	existing := map[string]bool{}
	if infos, err := s.Nodes(ctx); err == nil {
		for _, i := range infos {
			existing[i.ID] = true
		}
	}
	var moved []string
	for i := range items {
		it := &items[i]
		if it.Status == statusNerve || it.Server == connectEntry {
			continue
		}
		importOne(ctx, s, it, existing[it.Node])
		switch it.Status {
		case "added", "skipped":
			moved = append(moved, it.Server)
			fmt.Fprintf(env.Stderr, "moved %s to nerve as node %s\n", it.Server, it.Node)
		default:
			fmt.Fprintf(env.Stderr, "nerve: %s not moved (it stays in the client): %s\n", it.Server, it.Error)
		}
	}
	return moved, nil
}

// setServerEntry returns data with servers[name] = entry and the servers
// in remove deleted, where servers is the top-level object key. Only that
// object is rewritten; the rest of the file is kept byte for byte. It
// returns data unchanged when nothing changes.
func setServerEntry(data []byte, key, name string, entry any, remove []string) ([]byte, error) {
	unit := indentUnit(data)
	want, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		members := []member2{{name, want, true}}
		return []byte("{\n" + unit + fmt.Sprintf("%q", key) + ": " + renderObject(members, unit, unit) + "\n}\n"), nil
	}
	start, end, found, err := topLevelSpan(data, key)
	if err != nil {
		return nil, err
	}
	var members []member2
	if found {
		if members, err = objectMembers(data[start:end]); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
	}
	changed := false
	kept := members[:0]
	for _, m := range members {
		if slices.Contains(remove, m.key) && m.key != name {
			changed = true
			continue
		}
		kept = append(kept, m)
	}
	members = kept
	i := slices.IndexFunc(members, func(m member2) bool { return m.key == name })
	switch {
	case i < 0:
		members = append(members, member2{name, want, true})
		changed = true
	case !jsonEqual(members[i].val, want):
		members[i].val, members[i].fresh = want, true
		changed = true
	}
	if !changed {
		return data, nil
	}
	obj := renderObject(members, unit, unit)
	if found {
		return slices.Concat(data[:start], []byte(obj), data[end:]), nil
	}
	// No servers object yet: add one as the last member of the top level.
	closing := bytes.LastIndexByte(data, '}')
	body := bytes.TrimRight(data[:closing], " \t\r\n")
	sep := ","
	if bytes.HasSuffix(body, []byte("{")) {
		sep = ""
	}
	return slices.Concat(body, []byte(sep+"\n"+unit+fmt.Sprintf("%q", key)+": "+obj+"\n"), data[closing:]), nil
}

// connectServer is nerve's entry in a client's config.
type connectServer struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

type member2 struct {
	key   string
	val   json.RawMessage
	fresh bool // written by nerve, not read from the file
}

// topLevelSpan finds the value of key in the top-level object of data: the
// byte offsets of its start and end.
func topLevelSpan(data []byte, key string) (start, end int, found bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return 0, 0, false, fmt.Errorf("not JSON (comments and trailing commas cannot be kept): %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return 0, 0, false, errors.New("the file is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, 0, false, fmt.Errorf("not JSON (comments and trailing commas cannot be kept): %w", err)
		}
		k, _ := t.(string)
		before := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false, fmt.Errorf("not JSON (comments and trailing commas cannot be kept): %w", err)
		}
		if k != key {
			continue
		}
		end = int(dec.InputOffset())
		// The value starts after the colon and any space.
		rest := data[before:end]
		off := bytes.IndexByte(rest, ':') + 1
		for off < len(rest) && (rest[off] == ' ' || rest[off] == '\t' || rest[off] == '\n' || rest[off] == '\r') {
			off++
		}
		if bytes.TrimSpace(raw)[0] != '{' {
			return 0, 0, false, fmt.Errorf("%q is not an object", key)
		}
		return before + off, end, true, nil
	}
	if _, err := dec.Token(); err != nil {
		return 0, 0, false, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return 0, 0, false, errors.New("not JSON: something follows the top-level object")
	}
	return 0, 0, false, nil
}

// objectMembers returns the members of a JSON object in order.
func objectMembers(obj []byte) ([]member2, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []member2
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member2{key: t.(string), val: raw})
	}
	return out, nil
}

// renderObject writes members as an indented object whose closing brace
// sits at indent and whose members sit one unit deeper.
func renderObject(members []member2, indent, unit string) string {
	if len(members) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{")
	inner := indent + unit
	for i, m := range members {
		// A value of the file written on one line stays so; others are
		// indented to their place.
		var v bytes.Buffer
		if m.fresh || bytes.ContainsAny(m.val, "\n") {
			if err := json.Indent(&v, m.val, inner, unit); err != nil {
				v.Reset()
				v.Write(m.val)
			}
		} else {
			v.Write(m.val)
		}
		fmt.Fprintf(&b, "\n%s%s: %s", inner, mustJSON(m.key), v.String())
		if i < len(members)-1 {
			b.WriteString(",")
		}
	}
	b.WriteString("\n" + indent + "}")
	return b.String()
}

// indentUnit guesses a file's indentation: that of its first indented
// line, else two spaces.
func indentUnit(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && trimmed != "" {
			return line[:n]
		}
	}
	return "  "
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// writeDiff writes a unified-style diff of two texts: the lines they do
// not share, with three lines of context, after their common start and
// end are set aside.
func writeDiff(w io.Writer, path string, old, updated []byte) {
	a := strings.Split(string(old), "\n")
	b := strings.Split(string(updated), "\n")
	if len(old) == 0 {
		a = nil
	}
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	from := max(p-3, 0)
	after := min(s, 3)
	fmt.Fprintf(w, "--- %s\n+++ %s (nerve)\n", path, path)
	fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", from+1, len(a)-s-from+after, from+1, len(b)-s-from+after)
	for _, l := range a[from:p] {
		fmt.Fprintf(w, " %s\n", l)
	}
	for _, l := range a[p : len(a)-s] {
		fmt.Fprintf(w, "-%s\n", l)
	}
	for _, l := range b[p : len(b)-s] {
		fmt.Fprintf(w, "+%s\n", l)
	}
	for _, l := range b[len(b)-s : len(b)-s+after] {
		fmt.Fprintf(w, " %s\n", l)
	}
}
