package graph

import (
	"os"
	"syscall"
)

// datasync writes f's data (and the size that reaches it) to disk; unlike
// fsync it leaves times that nothing reads.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
