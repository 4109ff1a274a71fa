package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// `nerve mcp import --watch FILE` stays in the foreground after the import
// and applies each change of FILE to the session as an import does, with
// its refusals and warnings: a server added to the file becomes a node, a
// server removed from it is removed (only nodes imported from FILE: their
// spec's source names it), a server whose entry changed is replaced.
// A foreground watcher rather than a session setting the daemon follows:
// the person sees what each change did, and Ctrl-C ends it (issue 27).
//
// fsnotify (inotify, kqueue, ReadDirectoryChangesW) tells of a change at
// once and costs nothing between changes; polling the file would do
// neither. The folder is watched, not the file: editors save by writing a
// new file and renaming it over the old one, which ends a watch on the
// file itself.

// watchSettle is how long the file must stay unchanged before it is read:
// one save is often several events (truncate, write, rename).
const watchSettle = 200 * time.Millisecond

// watchImport applies FILE's changes to session s until SIGINT or SIGTERM.
func watchImport(ctx context.Context, env *Env, s *client.Session, file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", file, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("watching %s: %w", file, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(env.Stderr, "watching %s: each change is applied to the session (Ctrl-C stops)\n", file)
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(env.Stderr, "stopped watching %s\n", file)
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) == abs && !ev.Has(fsnotify.Chmod) {
				settle.Reset(watchSettle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintf(env.Stderr, "nerve: warning: watching %s: %v\n", file, err)
		case <-settle.C:
			applyChange(ctx, env, s, file, abs)
		}
	}
}

// applyChange reads FILE again and makes the session's nodes imported
// from it what the file says now.
func applyChange(ctx context.Context, env *Env, s *client.Session, file, abs string) {
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		// Removed, or half way through an editor's save: a file that is
		// gone removes nothing. Remove its nodes with `nerve node rm`.
		fmt.Fprintf(env.Stderr, "nerve: %s is gone; its nodes stay (waiting for it to come back)\n", file)
		return
	}
	fmt.Fprintf(env.Stderr, "%s changed (%s)\n", file, time.Now().Format("15:04:05"))
	im, err := readImport(env, file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "nerve: %v\nnerve: nothing was changed\n", err)
		return
	}
	ours, err := importedFrom(ctx, s, abs)
	if err != nil {
		fmt.Fprintf(env.Stderr, "nerve: %v\n", err)
		return
	}
	inFile := map[string]bool{}
	bad := 0
	if im != nil {
		bad = im.bad
		own := ""
		if ep, err := s.MCPEndpoint(ctx); err == nil {
			own = ep.URL
		}
		markNerveItself(im.items, own)
		for i := range im.items {
			it := &im.items[i]
			inFile[it.Node] = true
			if it.Status == statusNerve {
				printImported(env, it)
				continue
			}
			applyOne(ctx, s, it, ours[it.Node])
			if it.Status != "skipped" {
				printChanged(env, it, file)
			}
		}
	}
	if bad > 0 {
		fmt.Fprintf(env.Stderr, "nerve: %d server%s of %s written wrong (see above): no node is removed until it is fixed\n", bad, plural(bad), file)
		return
	}
	for id := range ours {
		if inFile[id] {
			continue
		}
		if err := s.Remove(ctx, id); err != nil {
			fmt.Fprintf(env.Stderr, "nerve: removing %s: %v\n", id, err)
			continue
		}
		fmt.Fprintf(env.Stdout, "removed %s: no longer in %s\n", id, file)
	}
}

// applyOne adds it, or replaces its node when it was imported from this
// file (mine) and its entry changed; otherwise it is an import's.
func applyOne(ctx context.Context, s *client.Session, it *importItem, mine bool) {
	if !mine {
		exists := true
		if _, err := s.Node(ctx, it.Node); errors.Is(err, client.ErrNodeNotFound) {
			exists = false
		}
		importOne(ctx, s, it, exists)
		return
	}
	d, tag, err := s.NodeTag(ctx, it.Node)
	switch {
	case err != nil:
		it.Status, it.Error = "failed", err.Error()
	case sameSpec(d.Spec, it.spec):
		it.Status, it.Info = "skipped", &d.Info
	default:
		replaceFailed(ctx, s, it, tag)
		if it.Status != "replaced" {
			return
		}
		it.Status = "changed"
		// A server that ran runs again with its new entry; the new node
		// would otherwise wait for its first call with the old server's
		// catalogue.
		if running := d.Info.State == node.Ready || d.Info.State == node.Busy; running && it.Info.State == node.Created {
			if info, err := s.Start(ctx, it.Node); err == nil {
				it.Info = &info
			} else {
				it.Status, it.Error = "failed", err.Error()
			}
		}
	}
}

// printChanged says what a change of the file did to one server.
func printChanged(env *Env, it *importItem, file string) {
	if it.Status == "changed" {
		fmt.Fprintf(env.Stdout, "replaced %s: its entry in %s changed: %s with %d tool%s\n", it.Node, file, it.Info.State, it.Info.Tools, plural(it.Info.Tools))
		return
	}
	printImported(env, it)
}

// importedFrom returns the ids of the session's mcp nodes imported from
// the file at abs.
func importedFrom(ctx context.Context, s *client.Session, abs string) (map[string]bool, error) {
	infos, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, i := range infos {
		if i.Kind != mcpconf.Kind {
			continue
		}
		d, err := s.Node(ctx, i.ID)
		if err != nil {
			continue // removed meanwhile
		}
		var o mcpconf.Options
		if d.Spec.DecodeOptions(&o) == nil && o.Source != nil && o.Source.File == abs {
			ours[i.ID] = true
		}
	}
	return ours, nil
}
