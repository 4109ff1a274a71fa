//go:build unix

package bash

import (
	"os"
	"syscall"
)

// procInfo is one row of the process table.
type procInfo struct {
	pid, ppid, pgid int
	zombie          bool
}

// descendants returns the live processes below root (not root itself).
func descendants(procs []procInfo, root int) []procInfo {
	children := make(map[int][]int, len(procs))
	byPid := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
		byPid[p.pid] = p
	}
	var out []procInfo
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if p := byPid[pid]; !p.zombie {
			out = append(out, p)
		}
		queue = append(queue, children[pid]...)
	}
	return out
}

// killSet signals processes: whole process groups where a group is not the
// shell's own (jobs under `set -m` each get one), single processes inside the
// shell's group (command substitutions) so the shell itself is spared. It
// never signals nerve's own process or process group.
type killSet struct {
	shellPgid int
	groups    map[int]bool
	pids      map[int]bool
}

func newKillSet(shellPgid int) *killSet {
	return &killSet{shellPgid: shellPgid, groups: map[int]bool{}, pids: map[int]bool{}}
}

func (k *killSet) add(p procInfo) {
	if p.pgid == k.shellPgid || p.pgid <= 1 {
		k.pids[p.pid] = true
	} else {
		k.groups[p.pgid] = true
	}
}

func (k *killSet) empty() bool { return len(k.groups) == 0 && len(k.pids) == 0 }

func (k *killSet) signal(sig syscall.Signal) {
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	for g := range k.groups {
		if g != ownGroup && g > 1 {
			_ = syscall.Kill(-g, sig)
		}
	}
	for p := range k.pids {
		if p != self && p > 1 {
			_ = syscall.Kill(p, sig)
		}
	}
}
