//go:build unix

package paths

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate makes dir 0700 and refuses it when another user owns it
// (someone could have made /tmp/nerve-$UID first).
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder: remove it and try again", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("runtime folder %s belongs to uid %d, not to you (uid %d): remove it or set XDG_RUNTIME_DIR", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	return nil
}
