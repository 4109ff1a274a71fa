// Package lifeline ends a child's processes when the daemon dies, however
// it dies. Pdeathsig (Linux) kills only the direct child; its own children
// — npx's real server, a shell's background jobs — would outlive a SIGKILLed
// daemon. A lifeline is a tiny sh, in its own process group, that reads a
// pipe only the daemon writes: EOF without the word "done" means the daemon
// is gone, and the sh kills what it was told to watch.
//
// Node kinds import it; it imports nothing of nerve's.
package lifeline

// Target says what a lifeline kills when the daemon dies. Zero fields are
// skipped; ids ≤ 1 are never signalled (kill -1 would mean every process).
type Target struct {
	// Group is a process group id: kill -9 -Group.
	Group int
	// Session is a session id: every process of it (pkill -s), and its
	// process group when pkill is missing.
	Session int
	// Marker is an exact NAME=VALUE environment entry; every process whose
	// environment holds it is killed (Linux: /proc/PID/environ). It catches
	// processes that left the group and session (setsid, double fork).
	Marker string
	// Cgroup is the folder of the child's cgroup (Linux): every process
	// in it is killed (cgroup.kill, else SIGKILL to each until it is
	// empty), wherever in the process tree it went.
	Cgroup string
}
