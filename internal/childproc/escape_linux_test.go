package childproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// useContainment makes this test process contain its children as mode
// (CgroupVar) says until the test ends, and returns what Containment
// says then.
func useContainment(t *testing.T, mode string) string {
	t.Helper()
	containment() // the process's own set-up is done and replaced below
	c, why := setupCgroups(mode)
	contain.mu.Lock()
	oldC, oldWhy := contain.c, contain.why
	contain.c, contain.why = c, why
	contain.mu.Unlock()
	t.Cleanup(func() {
		releaseCgroups()
		contain.mu.Lock()
		contain.c, contain.why = oldC, oldWhy
		contain.mu.Unlock()
	})
	if mode != "off" && c == nil {
		testutil.RequireE2E(t, "a writable cgroup hierarchy", fmt.Errorf("%s", why))
	}
	return why
}

// escaper is a child shell (with job control, as a bash node's) that
// leaves escapees behind: one that keeps the child's stdout and stderr,
// one that left every file of it, and the grandchild of a double fork
// whose middle process exits at once — each in a session of its own,
// with an empty environment. Each appends its pid to the file $1.
const escaper = `set -m
env -i setsid sh -c 'echo $$ >> "$1"; exec sleep 1000' sh "$1" &
env -i setsid sh -c 'echo $$ >> "$1"; exec sleep 1000' sh "$1" </dev/null >/dev/null 2>&1 &
(env -i sh -c 'echo $$ >> "$1"; exec sleep 1000' sh "$1" </dev/null >/dev/null 2>&1 &)
echo started
exec cat`

// escapees starts escaper and returns it with its escapees' pids: the one
// that keeps the child's files first.
func escapees(t *testing.T, file string) (*Proc, []int) {
	t.Helper()
	p := start(t, []string{"/bin/sh", "-c", escaper, "sh", file}, &Options{StopGrace: 50 * time.Millisecond, TermGrace: 50 * time.Millisecond})
	var pids []int
	testutil.WaitFor(t, 10*time.Second, func() bool {
		pids = pids[:0]
		b, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return len(pids) == 3
	}, "three escapees to write their pids")
	for _, pid := range pids {
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); strings.Contains(string(env), MarkerVar) {
			t.Fatalf("escapee %d kept the marker", pid)
		}
	}
	// The first escapee keeps the child's stdout: find it by its files.
	if !holdsLink(pids[0], p.links) {
		for i, pid := range pids {
			if holdsLink(pid, p.links) {
				pids[0], pids[i] = pids[i], pids[0]
			}
		}
	}
	return p, pids
}

// TestStopKillsEscapees: a child's escapees (env -i, setsid, a double
// fork) die with its Stop where the child has a cgroup, and with the
// daemon (AdoptOrphans' release) everywhere; another child's are
// untouched by the Stop; adopted processes are reaped. Without a cgroup,
// Stop kills the adopted escapee that holds the child's pipes; the others
// are left to the daemon's stop.
func TestStopKillsEscapees(t *testing.T) {
	for _, mode := range []string{"v2", "v1", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Logf("containment: %s", useContainment(t, mode))
			release := AdoptOrphans()
			t.Cleanup(release)
			dir := t.TempDir()
			victim, vp := escapees(t, filepath.Join(dir, "victim"))
			bystander, bp := escapees(t, filepath.Join(dir, "bystander"))

			stopWithin(t, context.Background(), victim, 10*time.Second)
			killed := vp
			if mode == "off" {
				killed = vp[:1]
			}
			for _, pid := range killed {
				testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessAlive(pid) },
					fmt.Sprintf("escapee %d to be gone after Stop", pid))
			}
			for _, pid := range bp {
				if !testutil.ProcessAlive(pid) {
					t.Errorf("escapee %d of another child died with this one's Stop", pid)
				}
			}
			testutil.WaitFor(t, 5*time.Second, func() bool { return len(zombieChildren()) == 0 },
				"the reaper to reap the killed escapees")

			stopWithin(t, context.Background(), bystander, 10*time.Second)
			release()
			for _, pid := range append(vp, bp...) {
				testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessAlive(pid) },
					fmt.Sprintf("escapee %d to be gone after the daemon's release", pid))
			}
			if mode != "off" {
				if _, err := os.Stat(victim.cg.c.dir); !os.IsNotExist(err) {
					t.Errorf("the release left the cgroup folder %s (%v)", victim.cg.c.dir, err)
				}
			}
		})
	}
}

// zombieChildren returns this process's children that exited and were not
// reaped.
func zombieChildren() []int {
	procs, _ := ProcessTable()
	var z []int
	for _, p := range procs {
		if p.Ppid == os.Getpid() && p.Zombie {
			z = append(z, p.Pid)
		}
	}
	return z
}

// TestReaperLeavesExecWaitAlone: the reaper reaps adopted orphans as they
// exit, and never a child that an exec.Cmd will wait for, which would fail
// its Wait with ECHILD — even one that exited long before its Wait.
func TestReaperLeavesExecWaitAlone(t *testing.T) {
	t.Cleanup(AdoptOrphans())
	waiting := exec.Command("/bin/true")
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return slices.Contains(zombieChildren(), waiting.Process.Pid) },
		"the child to exit and wait for its Wait")
	// An orphan that is adopted, exits and is reaped while the child waits.
	out, err := exec.Command("/bin/sh", "-c", "(sleep 0.01 </dev/null >/dev/null & echo $!)").Output()
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || orphan == 0 {
		t.Fatalf("starting the orphan: %q, %v", out, err)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
		return err != nil
	}, fmt.Sprintf("the adopted orphan %d to be reaped", orphan))
	if err := waiting.Wait(); err != nil {
		t.Errorf("exec.Cmd.Wait after the reaper ran: %v", err)
	}
}

// TestSweepStaleEmptiesDeadDaemonsGroups: the groups of a nerve process
// that died without removing them (its pid in the name is gone) are
// emptied and removed by the next daemon's SweepStale; a live one's
// groups are left alone.
func TestSweepStaleEmptiesDeadDaemonsGroups(t *testing.T) {
	for _, mode := range []string{"v2", "v1"} {
		t.Run(mode, func(t *testing.T) {
			useContainment(t, mode)
			home := contain.c.home
			// No pid is ever this large (pid_max ≤ 2^22).
			stale := filepath.Join(home, groupPrefix+"999999999-1")
			if err := os.MkdirAll(filepath.Join(stale, "c1"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(filepath.Join(stale, "c1")); os.Remove(stale) })
			left := exec.Command("sleep", "1000")
			if err := left.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { left.Process.Kill(); left.Wait() })
			if err := os.WriteFile(filepath.Join(stale, "c1", "cgroup.procs"), []byte(strconv.Itoa(left.Process.Pid)), 0); err != nil {
				t.Fatal(err)
			}
			// Our own group, which the sweep must not touch.
			mine := start(t, []string{"/bin/cat"}, nil)
			if err := SweepStale(""); err != nil {
				t.Fatalf("SweepStale: %v", err)
			}
			if err := left.Wait(); err == nil || signalOf(left.ProcessState) != syscall.SIGKILL {
				t.Errorf("the stale group's process ended with %v, want SIGKILL", err)
			}
			if _, err := os.Stat(stale); !os.IsNotExist(err) {
				t.Errorf("the stale group is still there (%v)", err)
			}
			if !testutil.ProcessAlive(mine.Pid()) {
				t.Error("the sweep killed a live daemon's child")
			}
		})
	}
}
