package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// A saved spec must never crash-loop the daemon (issue 21): a spec that
// kills the daemon while it is restored would kill every daemon started
// after it. So before a node is restored, a marker file
// Sessions/<session>/restoring/<node> is written durably, and it is removed
// once the node's start has returned (or, for a lazy node, once it is
// built). A marker left over at the next start means the daemon died
// restoring that node (or while it started beside others): that node is
// held in ERROR, not built, until `nerve node restart` or `nerve node rm`.

func (d *Daemon) restoringDir(sess string) string {
	return filepath.Join(d.opts.Paths.Sessions, sess, "restoring")
}

// markRestoring durably records that the nodes ids of session sess are
// being restored: one file each, then one sync of the folder, which makes
// every new name durable (a restore of hundreds of nodes costs one sync,
// not hundreds). The files' content, when the restore began, is only for
// the message.
func (d *Daemon) markRestoring(sess string, ids []string) {
	if !d.opts.Persist || len(ids) == 0 {
		return
	}
	dir := d.restoringDir(sess)
	err := os.MkdirAll(dir, 0o700)
	began := []byte(time.Now().UTC().Format(time.RFC3339) + "\n")
	for _, id := range ids {
		if err != nil {
			break
		}
		err = os.WriteFile(filepath.Join(dir, id), began, 0o600)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		d.log.Warn("marking nodes as being restored", zap.String("session", sess), zap.Error(err))
	}
}

// syncDir makes the folder's entries durable; as in atomicfile, a file
// system that refuses to sync folders is not worth failing for.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	_ = f.Sync()
	return f.Close()
}

// unmarkRestoring removes node id's marker, if any. The removal is not
// synced: after a power loss the marker may come back, and the node is
// then held once more (one `nerve node restart`), never lost.
func (d *Daemon) unmarkRestoring(sess, id string) {
	// Both may come from a request's path: never a path of their own.
	if !d.opts.Persist || ValidateSessionName(sess) != nil || node.ValidateID(id) != nil {
		return
	}
	err := os.Remove(filepath.Join(d.restoringDir(sess), id))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("clearing a node's restore marker", zap.String("session", sess), zap.String("node", id), zap.Error(err))
	}
}

// leftoverRestoring returns the markers an earlier daemon left: node id →
// when its restore began.
func (d *Daemon) leftoverRestoring(sess string) map[string]string {
	if !d.opts.Persist {
		return nil
	}
	entries, err := os.ReadDir(d.restoringDir(sess))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue // an atomicfile temporary, removed with the others
		}
		data, _ := os.ReadFile(filepath.Join(d.restoringDir(sess), e.Name()))
		out[e.Name()] = strings.TrimSpace(string(data))
	}
	return out
}

// heldReason is the ERROR reason of a node held because its restore did not
// finish last time.
func heldReason(id, began string) string {
	when := ""
	if began != "" {
		when = " (restore began " + began + ")"
	}
	return fmt.Sprintf("the daemon died while restoring this node last time%s, so it was not restored again: check its spec with `nerve node info %s`, fix it (`nerve node rm %s` and add it again), or try it once more with `nerve node restart %s`", when, id, id, id)
}
