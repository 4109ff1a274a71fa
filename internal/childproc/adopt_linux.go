package childproc

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// adoption is the subreaper's state (AdoptOrphans).
var adoption struct {
	// mu guards the fields below.
	mu   sync.Mutex
	on   bool
	stop chan struct{} // closed to end the reaper
	done chan struct{} // closed when the reaper has ended
}

// AdoptOrphans makes this process (the daemon) the child subreaper of
// everything it starts: a process whose parent exits — the grandchild of a
// double fork, what `setsid` or `nohup … &` leaves behind — is reparented
// to the daemon instead of to init, so it can never leave the daemon's
// process tree. A reaper reaps those adopted processes when they exit;
// it finds them in /proc (parent = the daemon, not a child this package
// or os/exec started) and waits for each by pid, so it never takes an
// exit that an exec.Cmd's Wait is waiting for.
//
// The returned function is the daemon's last step: it stops the reaper,
// kills every adopted process still running (and what each started), and
// removes this process's cgroups. Call it after every node has stopped.
// Linux only; elsewhere both do nothing.
func AdoptOrphans() (release func()) {
	adoption.mu.Lock()
	defer adoption.mu.Unlock()
	if adoption.on {
		return func() {}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return func() {}
	}
	adoption.on = true
	stop, done := make(chan struct{}), make(chan struct{})
	adoption.stop, adoption.done = stop, done
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	go func() {
		defer close(done)
		for {
			select {
			case <-sig:
				reapAdopted()
			case <-stop:
				signal.Stop(sig)
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			killAdopted()
			releaseCgroups()
			adoption.mu.Lock()
			adoption.on = false
			adoption.mu.Unlock()
			unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			reapAdopted()
		})
	}
}

// adopting reports whether this process is the subreaper.
func adopting() bool {
	adoption.mu.Lock()
	defer adoption.mu.Unlock()
	return adoption.on
}

// adopted returns this process's children that it did not start itself:
// not started by Start (or its lifeline) and not held by a pidfd, which
// os/exec keeps for every child it will wait for (Go ≥ 1.23, Linux ≥ 5.4).
// The caller holds starting for writing, so no child of ours is between
// its fork and its registration.
func adopted(procs []ProcInfo) []ProcInfo {
	self := os.Getpid()
	var out []ProcInfo
	var held map[int]bool
	for _, p := range procs {
		if p.Ppid != self || isKnown(p.Pid) {
			continue
		}
		if held == nil {
			held = pidfdPids()
		}
		if !held[p.Pid] {
			out = append(out, p)
		}
	}
	return out
}

// pidfdPids returns the pids this process holds a pidfd for
// (/proc/self/fdinfo/N has "Pid:" for a pidfd).
func pidfdPids() map[int]bool {
	held := map[int]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return held
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.Contains(l, "pidfd") {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for line := range bytes.SplitSeq(info, []byte{'\n'}) {
			if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
				if pid, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
					held[pid] = true
				}
			}
		}
	}
	return held
}

// reapAdopted waits for every adopted process that has exited.
func reapAdopted() {
	starting.Lock()
	defer starting.Unlock()
	procs, err := ProcessTable()
	if err != nil {
		return
	}
	for _, p := range adopted(procs) {
		if p.Zombie {
			var ws unix.WaitStatus
			unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// killAdopted kills every adopted process and everything below it, until
// none is left (a process being killed may fork, and the children of a
// killed one are adopted in turn).
func killAdopted() {
	for round := range 50 {
		starting.Lock()
		procs, err := ProcessTable()
		if err != nil {
			starting.Unlock()
			return
		}
		ks := NewKillSet(-1)
		for _, p := range adopted(procs) {
			if p.Zombie {
				var ws unix.WaitStatus
				unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
				continue
			}
			ks.pids[p.Pid] = true
			for _, d := range Descendants(procs, p.Pid) {
				ks.pids[d.Pid] = true
			}
		}
		starting.Unlock()
		if ks.Empty() {
			return
		}
		ks.Signal(syscall.SIGKILL)
		time.Sleep(time.Duration(round+1) * time.Millisecond)
	}
}

// fileLinks returns how /proc/PID/fd names the pipes and sockets among
// files ("pipe:[INODE]"): a process holding one got it from the child.
func fileLinks(files ...*os.File) map[string]bool {
	links := map[string]bool{}
	for _, f := range files {
		if f == nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO:
			links["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		case unix.S_IFSOCK:
			links["socket:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	return links
}

// holdsLink reports whether pid has one of links open.
func holdsLink(pid int, links map[string]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(dir + e.Name()); err == nil && links[l] {
			return true
		}
	}
	return false
}

// adoptedOf adds to ks the adopted processes (and what they started) that
// hold one of the child's pipes: without a cgroup, the only trace left of
// where an orphan that cleared its environment came from. The rest are
// killed when the daemon stops (AdoptOrphans).
func adoptedOf(ks *KillSet, procs []ProcInfo, links map[string]bool) {
	if len(links) == 0 || !adopting() {
		return
	}
	starting.Lock()
	orphans := adopted(procs)
	starting.Unlock()
	for _, o := range orphans {
		if o.Zombie {
			continue
		}
		for _, p := range append([]ProcInfo{o}, Descendants(procs, o.Pid)...) {
			if holdsLink(p.Pid, links) {
				ks.Add(p)
				for _, d := range Descendants(procs, p.Pid) {
					ks.Add(d)
				}
			}
		}
	}
}
