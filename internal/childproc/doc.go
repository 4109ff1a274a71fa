// Package childproc runs the child process behind a node — the one process
// runner of every kind: a program with its stdin and stdout as pipes (or
// the kind's own files), found on the child's own PATH, in its own process
// group or session, tied to the daemon's life (Pdeathsig, started from a
// thread held for the child's lifetime, and a lifeline for what it
// starts), marked by an environment variable its descendants inherit, its
// stderr kept in a ring of the last lines, and stopped in bounded steps:
// close stdin, wait, SIGTERM to the group, wait, SIGKILL, sweep the group
// and every marked process that left it (setsid, double fork). On Linux
// each child is also born in a cgroup of its own where one can be made
// (NERVE_CGROUP), killed whole at stop, so not even a process that cleared
// its environment escapes; and AdoptOrphans makes the daemon the child
// subreaper that reaps orphans and kills them when it stops. On Windows a
// name is found by PATHEXT, a batch file (npx.cmd) runs through cmd.exe
// with a command line quoted for it, and each child is in a job object of
// its own, which ends whole at Stop and when the daemon exits.
//
// It holds the mechanism only; what the messages say and how long to wait
// are the node kind's. Node kinds import it; it imports internal/lifeline
// and nothing else of nerve's.
package childproc
