package clientconf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/atomicfile"
)

// Write replaces the config file at path, whose content was old (nil: the
// file did not exist), with updated: a file that existed is first copied
// beside itself (PATH.nerve-backup-TIME, whose name it returns) and keeps
// its permissions; every write is atomic.
func Write(path string, old, updated []byte, existed bool) (backup string, err error) {
	perm := os.FileMode(0o600)
	if existed {
		backup = path + ".nerve-backup-" + time.Now().UTC().Format("20060102T150405Z")
		if err := atomicfile.Write(backup, old, 0o600); err != nil {
			return "", fmt.Errorf("backing up %s: %w; nothing was changed", path, err)
		}
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating the folder of %s: %w", path, err)
	}
	if err := atomicfile.Write(path, updated, perm); err != nil {
		return backup, fmt.Errorf("writing %s: %w", path, err)
	}
	return backup, nil
}

// Diff writes a unified-style diff of two texts: the lines they do not
// share, with three lines of context, after their common start and end
// are set aside.
func Diff(w io.Writer, path string, old, updated []byte) {
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
