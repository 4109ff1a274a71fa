//go:build !linux && !windows

package childproc

import (
	"os"
	"os/exec"
)

// AdoptOrphans does nothing here: only Linux has a child subreaper.
func AdoptOrphans() (release func()) { return func() {} }

// fileLinks: other systems' children are not traced by their files.
func fileLinks(...*os.File) map[string]bool { return nil }

// Containment says how this process's children are contained.
func Containment() string { return "no cgroup (Linux only)" }

// SweepStale does nothing here: there are no cgroups to sweep.
func SweepStale(string) error { return nil }

// cgroup is a child's group; there are none here.
type cgroup struct{}

func newCgroup() *cgroup        { return nil }
func (g *cgroup) Dir() string   { return "" }
func (g *cgroup) kill()         {}
func (g *cgroup) remove() error { return nil }
func (g *cgroup) start(mk func() *exec.Cmd, reap func(*exec.Cmd)) (*exec.Cmd, error) {
	cmd := mk()
	return cmd, startOnLockedThread(cmd, nil, nil, reap)
}
