//go:build unix

package front

import (
	"fmt"
	"os"
	"syscall"
)

// execCore replaces this process with the core: same pid, same
// descriptors, same terminal, so signals and exit codes are the core's.
func execCore(core string, args, env []string) int {
	argv := append([]string{args[0]}, args[1:]...)
	err := syscall.Exec(core, argv, env)
	fmt.Fprintf(os.Stderr, "nerve: running %s: %v\n", core, err)
	return exitFailed
}

// lockFile takes an exclusive lock on path (created if need be) and
// returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// inherit clears close-on-exec on fd, so the core it is handed to has it.
func inherit(fd int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0); e != 0 {
		return e
	}
	return nil
}
