//go:build unix

package childproc

import (
	"os"
	"syscall"
)

// ProcInfo is one row of the process table.
type ProcInfo struct {
	Pid, Ppid, Pgid int
	Zombie          bool
}

// Descendants returns the live processes below root (not root itself).
func Descendants(procs []ProcInfo, root int) []ProcInfo {
	children := make(map[int][]int, len(procs))
	byPid := make(map[int]ProcInfo, len(procs))
	for _, p := range procs {
		children[p.Ppid] = append(children[p.Ppid], p.Pid)
		byPid[p.Pid] = p
	}
	var out []ProcInfo
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if p := byPid[pid]; !p.Zombie {
			out = append(out, p)
		}
		queue = append(queue, children[pid]...)
	}
	return out
}

// KillSet signals processes: whole process groups where a group is not the
// child's own (a shell's jobs under `set -m` each get one, a setsid()
// escapee leads its own), single processes inside the child's group so the
// child itself is spared. It never signals nerve's own process or process
// group.
type KillSet struct {
	childPgid int
	groups    map[int]bool
	pids      map[int]bool
}

// NewKillSet returns an empty set for the child whose group is childPgid.
func NewKillSet(childPgid int) *KillSet {
	return &KillSet{childPgid: childPgid, groups: map[int]bool{}, pids: map[int]bool{}}
}

// Add adds p: its group, or p alone when it is in the child's group.
func (k *KillSet) Add(p ProcInfo) {
	if p.Pgid == k.childPgid || p.Pgid <= 1 {
		k.pids[p.Pid] = true
	} else {
		k.groups[p.Pgid] = true
	}
}

// AddGroup adds a whole process group.
func (k *KillSet) AddGroup(pgid int) {
	if pgid > 1 {
		k.groups[pgid] = true
	}
}

// Empty reports whether the set holds nothing.
func (k *KillSet) Empty() bool { return len(k.groups) == 0 && len(k.pids) == 0 }

// Signal sends sig to every group and process of the set.
func (k *KillSet) Signal(sig syscall.Signal) {
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

// KillAll sends SIGKILL to everything the child started — its cgroup,
// where it has one (all of it, wherever a process went); its process tree
// while it runs; the extra groups given (a shell's jobs); every process
// that carries its marker after leaving the tree (setsid, double fork);
// and, in a daemon that adopts orphans but has no cgroup, the adopted
// processes that still hold one of the child's pipes — and to the child's
// own group first. It repeats while it finds some, as a process may fork
// while it is being killed. It does not count as nerve signalling the
// child (see Signalled): Stop sweeps with it after the child has exited.
func (p *Proc) KillAll(extraGroups ...int) {
	for round := range 10 {
		ks := NewKillSet(p.pid)
		if procs, err := ProcessTable(); err == nil {
			select {
			case <-p.exited:
				// Reaped: its pid may be another process's now, so
				// its tree is not asked for; the marker still finds its
				// escapees.
			default:
				for _, d := range Descendants(procs, p.pid) {
					ks.Add(d)
				}
			}
			for _, d := range MarkerHolders(procs, p.marker) {
				ks.Add(d)
			}
			if p.cg == nil || p.cg.Dir() == "" {
				adoptedOf(ks, procs, p.links)
			}
		}
		if round == 0 {
			for _, g := range extraGroups {
				ks.AddGroup(g)
			}
		}
		// The child first: a shell must not see its command die and
		// report that as the command's status.
		killGroup(p.pid)
		p.cg.kill()
		ks.Signal(syscall.SIGKILL)
		if ks.Empty() {
			return
		}
	}
}
