package childproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// groupPrefix names each process's group of groups:
// nerve-PID-STARTTIME, so a later process tells a dead owner's groups
// (SweepStale) from a live one's even when the pid was reused.
const groupPrefix = "nerve-"

// cgroups is where this process puts its children's groups: one folder
// of its own under its own cgroup, and in it one group per child.
type cgroups struct {
	v2   bool
	ctrl string // "cgroup2", "freezer" or "pids"
	// home is this process's own cgroup, where its threads go back to
	// after forking a v1 child; dir is the folder of its children's groups.
	home, dir string
	seq       atomic.Int64
}

// contain is this process's containment, set up on first use.
var contain struct {
	once sync.Once
	// mu guards the fields below.
	mu  sync.Mutex
	c   *cgroups // nil: none
	why string   // what Containment reports
}

func containment() *cgroups {
	contain.once.Do(func() {
		c, why := setupCgroups(os.Getenv(CgroupVar))
		contain.mu.Lock()
		contain.c, contain.why = c, why
		contain.mu.Unlock()
	})
	contain.mu.Lock()
	defer contain.mu.Unlock()
	return contain.c
}

// disableCgroups stops using cgroups for the rest of the process (a start
// into one failed where a start without succeeded).
func disableCgroups(err error) {
	contain.mu.Lock()
	defer contain.mu.Unlock()
	contain.c = nil
	contain.why = fmt.Sprintf("no cgroup (starting a child in one failed: %v)", err)
}

// Containment says how this process's children are contained: the cgroup
// folder that holds their groups, or why there is none. The daemon logs
// it at start.
func Containment() string {
	containment()
	contain.mu.Lock()
	defer contain.mu.Unlock()
	return contain.why
}

// SweepStale kills what is left in the groups of nerve processes that
// died without removing them (a daemon killed with SIGKILL whose lifeline
// was killed too) and removes the groups. It looks beside this process's
// own group, where an earlier daemon started from the same place put
// its. The daemon runs it at start (nodes/all.Cleanups); the argument is
// unused.
func SweepStale(string) error {
	c := containment()
	if c == nil {
		return nil
	}
	return sweepStale(c.home, filepath.Base(c.dir))
}

func sweepStale(home, own string) error {
	entries, err := os.ReadDir(home)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, groupPrefix) || name == own || ownerAlive(name) {
			continue
		}
		dir := filepath.Join(home, name)
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				g := &cgroup{dir: filepath.Join(dir, s.Name())}
				g.kill()
				if err := g.remove(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("removing the stale cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// ownerAlive reports whether the process that named the group
// nerve-PID-START still runs (its pid with the same start time).
func ownerAlive(name string) bool {
	pid, start, ok := strings.Cut(strings.TrimPrefix(name, groupPrefix), "-")
	if !ok {
		return false
	}
	p, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	st, ok := startTime(p)
	return ok && strconv.FormatUint(st, 10) == start
}

// startTime returns a process's start time (field 22 of /proc/PID/stat,
// in clock ticks since boot): with the pid, it names one process for good.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return 0, false
	}
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	return st, err == nil
}

// setupCgroups finds where this process may make groups, makes its own
// folder there and sweeps what dead nerve processes left beside it.
func setupCgroups(mode string) (*cgroups, string) {
	if mode == "off" {
		return nil, "no cgroup (" + CgroupVar + "=off)"
	}
	mounts, own, err := readCgroupTables()
	if err != nil {
		return nil, fmt.Sprintf("no cgroup (%v)", err)
	}
	st, ok := startTime(os.Getpid())
	if !ok {
		return nil, "no cgroup (cannot read this process's start time)"
	}
	name := fmt.Sprintf("%s%d-%d", groupPrefix, os.Getpid(), st)
	var whys []string
	try := func(ctrl string, v2 bool) *cgroups {
		home, err := ownCgroupDir(mounts, own, ctrl)
		if err == nil {
			dir := filepath.Join(home, name)
			if err = os.Mkdir(dir, 0o755); err == nil || errors.Is(err, os.ErrExist) {
				c := &cgroups{v2: v2, ctrl: ctrl, home: home, dir: dir}
				if err = c.usable(); err == nil {
					sweepStale(home, name)
					return c
				}
				unix.Rmdir(dir)
			}
		}
		whys = append(whys, ctrl+": "+err.Error())
		return nil
	}
	if mode != "v1" {
		if c := try("cgroup2", true); c != nil {
			return c, "cgroup v2 under " + c.dir
		}
	}
	if mode != "v2" {
		for _, ctrl := range []string{"freezer", "pids"} {
			if c := try(ctrl, false); c != nil {
				return c, "cgroup v1 (" + ctrl + ") under " + c.dir
			}
		}
	}
	return nil, "no cgroup (" + strings.Join(whys, "; ") + ")"
}

// usable checks that a group of c can be killed as a whole.
func (c *cgroups) usable() error {
	var need string
	switch c.ctrl {
	case "cgroup2":
		need = "cgroup.freeze" // cgroup.kill is newer (5.14); freezing is enough
	case "freezer":
		need = "freezer.state"
	case "pids":
		need = "pids.max"
	}
	if _, err := os.Stat(filepath.Join(c.dir, need)); err != nil {
		return fmt.Errorf("%s has no %s", c.dir, need)
	}
	return nil
}

// cgroupMount is a mounted cgroup hierarchy: v2 ("cgroup2") or a v1 one
// named by the controllers it holds.
type cgroupMount struct {
	root, point string
	ctrls       []string // v1 only
}

// readCgroupTables reads the mounted hierarchies (/proc/self/mountinfo)
// and this process's cgroup in each (/proc/self/cgroup: "0::PATH" for v2,
// "N:CTRL,CTRL:PATH" for v1).
func readCgroupTables() (mounts []cgroupMount, own map[string]string, err error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(mi))
	for sc.Scan() {
		// id parent maj:min root point opts [optional…] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			mounts = append(mounts, cgroupMount{root: f[3], point: unescapeMount(f[4])})
		case "cgroup":
			mounts = append(mounts, cgroupMount{root: f[3], point: unescapeMount(f[4]), ctrls: strings.Split(g[2], ",")})
		}
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, err
	}
	own = map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own["cgroup2"] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return mounts, own, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroupDir returns the folder of this process's cgroup in the
// hierarchy ctrl ("cgroup2" or a v1 controller).
func ownCgroupDir(mounts []cgroupMount, own map[string]string, ctrl string) (string, error) {
	path, ok := own[ctrl]
	if !ok {
		return "", errors.New("this process is in no such hierarchy")
	}
	for _, m := range mounts {
		if (ctrl == "cgroup2") != (m.ctrls == nil) {
			continue
		}
		if m.ctrls != nil && !contains(m.ctrls, ctrl) {
			continue
		}
		rel, ok := strings.CutPrefix(path, m.root)
		if m.root == "/" {
			rel, ok = path, true
		}
		if !ok {
			continue
		}
		return filepath.Join(m.point, rel), nil
	}
	return "", errors.New("its cgroup is not mounted here")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cgroup is one child's group. Everything the child starts is born in it
// and cannot leave it (only a privileged process could move it out), so
// killing the group ends the child's processes wherever they went:
// another session, a cleared environment, a parent that exited.
type cgroup struct {
	dir string
	v1  bool // a v1 hierarchy: threads are moved by tid (tasks)
	fd  int  // v2: the open folder, for CLONE_INTO_CGROUP until Start returns
	c   *cgroups
}

// newCgroup makes a group for one child, or returns nil where this process
// contains none.
func newCgroup() *cgroup {
	c := containment()
	if c == nil {
		return nil
	}
	var dir string
	err := os.ErrExist
	for range 100 {
		dir = filepath.Join(c.dir, "c"+strconv.FormatInt(c.seq.Add(1), 10))
		err = os.Mkdir(dir, 0o755)
		if errors.Is(err, os.ErrNotExist) {
			// releaseCgroups removed the folder; this process goes on.
			os.Mkdir(c.dir, 0o755)
			err = os.Mkdir(dir, 0o755)
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil
	}
	g := &cgroup{dir: dir, v1: !c.v2, fd: -1, c: c}
	if c.v2 {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Rmdir(dir)
			return nil
		}
		g.fd = fd
	}
	return g
}

// Dir returns the group's folder ("" for nil).
func (g *cgroup) Dir() string {
	if g == nil {
		return ""
	}
	return g.dir
}

// start starts the command mk makes in g (or as it is, for nil) from a
// held thread (see startOnLockedThread) and returns it. cgroup v2 has the kernel
// start the child in the group (clone3 CLONE_INTO_CGROUP). v1 has no such
// call, but moves single threads: the held thread joins the group, forks
// the child into it and goes back, so nothing the child does ever runs
// outside it. A start that fails in the group and succeeds without turns
// containment off for the rest of the process.
func (g *cgroup) start(mk func() *exec.Cmd, reap func(*exec.Cmd)) (*exec.Cmd, error) {
	if g == nil {
		cmd := mk()
		return cmd, startOnLockedThread(cmd, nil, nil, reap)
	}
	cmd := mk()
	var err error
	if g.v1 {
		var tid string
		entered := false
		err = startOnLockedThread(cmd, func() error {
			tid = strconv.Itoa(unix.Gettid())
			if err := os.WriteFile(filepath.Join(g.dir, "tasks"), []byte(tid), 0); err != nil {
				return err
			}
			entered = true
			return nil
		}, func() error {
			return os.WriteFile(filepath.Join(g.c.home, "tasks"), []byte(tid), 0)
		}, reap)
		if err == nil || entered {
			return cmd, err // started, or the program's own failure
		}
	} else {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.fd
		err = startOnLockedThread(cmd, nil, nil, reap)
		unix.Close(g.fd)
		g.fd = -1
		if err == nil {
			return cmd, nil
		}
	}
	// Try once more without: if that works, the group was the trouble.
	cmd = mk()
	unix.Rmdir(g.dir)
	g.dir = ""
	if err2 := startOnLockedThread(cmd, nil, nil, reap); err2 != nil {
		return cmd, err2
	}
	disableCgroups(err)
	return cmd, nil
}

// kill ends every process of the group: cgroup.kill where the kernel has
// it (5.14), else freeze the group, SIGKILL each of its processes, thaw
// (v2 or the v1 freezer: no process can fork while frozen), else forbid
// forks (pids.max 0) and SIGKILL until it is empty. It does not wait for
// them to exit (remove does).
func (g *cgroup) kill() {
	if g == nil || g.dir == "" {
		return
	}
	if os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	freeze, thaw, state := "", "", ""
	switch {
	case fileExists(filepath.Join(g.dir, "cgroup.freeze")):
		freeze, thaw, state = "cgroup.freeze:1", "cgroup.freeze:0", "cgroup.events:frozen 1"
	case fileExists(filepath.Join(g.dir, "freezer.state")):
		freeze, thaw, state = "freezer.state:FROZEN", "freezer.state:THAWED", "freezer.state:FROZEN"
	default:
		os.WriteFile(filepath.Join(g.dir, "pids.max"), []byte("0"), 0)
	}
	self := os.Getpid()
	for range 10 {
		pids := g.procs()
		if len(pids) == 0 {
			return
		}
		if contains(pids, strconv.Itoa(self)) {
			// One of our threads is inside (a v1 start under way): a
			// frozen daemon thread would hang the daemon.
			freeze = ""
		}
		if freeze != "" {
			g.write(freeze)
			g.waitFor(state)
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid > 1 && pid != self {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		if freeze != "" {
			g.write(thaw)
		}
	}
}

// write writes "file:value".
func (g *cgroup) write(fv string) {
	f, v, _ := strings.Cut(fv, ":")
	os.WriteFile(filepath.Join(g.dir, f), []byte(v), 0)
}

// waitFor waits up to a second for "file:line" to hold (a freeze takes
// effect once every task reaches a safe point).
func (g *cgroup) waitFor(fl string) {
	f, line, _ := strings.Cut(fl, ":")
	for d := time.Millisecond; d < time.Second; d *= 2 {
		b, _ := os.ReadFile(filepath.Join(g.dir, f))
		for l := range strings.SplitSeq(string(b), "\n") {
			if strings.TrimSpace(l) == line {
				return
			}
		}
		time.Sleep(d)
	}
}

// procs lists the group's processes (exited ones are not listed).
func (g *cgroup) procs() []string {
	b, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	return strings.Fields(string(b))
}

// remove kills the group until it is empty and removes it. A process
// stuck in the kernel (D state) can keep it for a while: the group is
// then left to the daemon's exit or the next daemon's sweep.
func (g *cgroup) remove() error {
	if g == nil || g.dir == "" {
		return nil
	}
	var err error
	for d := time.Millisecond; d < 2*time.Second; d *= 2 {
		g.kill()
		if err = unix.Rmdir(g.dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		time.Sleep(d)
	}
	return fmt.Errorf("removing the cgroup %s: %w", g.dir, err)
}

// releaseCgroups kills what is left in this process's groups and removes
// them and its folder: the daemon's last step.
func releaseCgroups() {
	contain.mu.Lock()
	c := contain.c
	contain.mu.Unlock()
	if c == nil {
		return
	}
	subs, _ := os.ReadDir(c.dir)
	for _, s := range subs {
		if s.IsDir() {
			(&cgroup{dir: filepath.Join(c.dir, s.Name())}).remove()
		}
	}
	unix.Rmdir(c.dir)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
