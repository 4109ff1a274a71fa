//go:build linux

package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// escapes are the bash commands that leave a process behind every trace
// but a cgroup; each escapee appends its pid to the file %[1]s. The last
// is a double fork whose middle process (the subshell) exits at once.
var escapes = []string{
	`env -i setsid sh -c 'echo $$ >> %[1]s; exec sleep 1000' &`,
	`(env -i setsid sh -c 'echo $$ >> %[1]s; exec sleep 1000' &)`,
	`nohup env -i setsid sh -c 'echo $$ >> %[1]s; exec sleep 1000' >/dev/null 2>&1 </dev/null & disown`,
	`(env -i sh -c 'echo $$ >> %[1]s; exec sleep 1000' &)`,
}

// TestNodeProcessesCannotEscape (issue 27, item 4): processes that a bash
// node's commands and an MCP server leave behind with `env -i`, `setsid`,
// `nohup … & disown` and a double fork die with their node on `node rm`
// and with the daemon on `daemon stop`; another node's are untouched by
// the rm. Before, every one of them outlived both. Run once with cgroups
// (v2 where the daemon's cgroup takes groups, and v1 forced) and once
// without (NERVE_CGROUP=off: the daemon is their subreaper).
func TestNodeProcessesCannotEscape(t *testing.T) {
	for _, mode := range []string{"auto", "v1", "off"} {
		t.Run(mode, func(t *testing.T) { testEscapes(t, mode) })
	}
}

func testEscapes(t *testing.T, mode string) {
	t.Setenv("NERVE_CGROUP", mode)
	h := newHome(t)
	badmcp := testutil.BuildBinary(t, "./fixtures/badmcp")
	dir := t.TempDir()
	pidFile := func(name string) string { return filepath.Join(dir, name) }

	for _, n := range []string{"victim", "other"} {
		h.must("node", "add", "bash", n)
	}
	// Each server's escapee is started before its node is READY.
	for _, n := range []string{"srv", "bystander"} {
		h.must("node", "add", "mcp", n, "--", badmcp, "--mode", "ok", "--escape-child", pidFile(n))
	}
	daemon := h.daemonPID()
	containment := daemonContainment(t, h)
	if mode != "off" && !strings.HasPrefix(containment, "cgroup") {
		testutil.RequireE2E(t, "a writable cgroup hierarchy", fmt.Errorf("the daemon says %q", containment))
	}
	t.Logf("containment: %s", containment)
	for _, n := range []string{"victim", "other"} {
		for _, e := range escapes {
			h.must("call", "@"+n, fmt.Sprintf(e, pidFile(n)))
		}
	}
	pids := map[string][]int{}
	for n, want := range map[string]int{"victim": len(escapes), "other": len(escapes), "srv": 1, "bystander": 1} {
		testutil.WaitFor(t, 10*time.Second, func() bool {
			pids[n] = readPids(pidFile(n))
			return len(pids[n]) == want
		}, fmt.Sprintf("%d escapees of %s to write their pids", want, n))
		for _, pid := range pids[n] {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			if !testutil.ProcessAlive(pid) {
				t.Fatalf("escapee %d of %s is not running", pid, n)
			}
			if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); strings.Contains(string(env), "NERVE_") {
				t.Fatalf("escapee %d of %s kept nerve's marker: %q", pid, n, env)
			}
		}
	}

	h.must("node", "rm", "victim")
	h.must("node", "rm", "srv")
	killedByRm := append([]int(nil), pids["victim"]...)
	if mode != "off" {
		// Without a cgroup nothing ties the server's escapee to its node
		// (no marker, no pipe): it is the daemon's, killed when it stops
		// (docs/nodes.md).
		killedByRm = append(killedByRm, pids["srv"]...)
	}
	for _, pid := range killedByRm {
		testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessAlive(pid) },
			fmt.Sprintf("escapee %d (%s) to be gone after node rm", pid, cmdline(pid)))
	}
	for _, n := range []string{"other", "bystander"} {
		for _, pid := range pids[n] {
			if !testutil.ProcessAlive(pid) {
				t.Errorf("escapee %d of node %s died when other nodes were removed", pid, n)
			}
		}
	}

	h.must("daemon", "stop")
	for _, n := range []string{"other", "bystander", "srv"} {
		for _, pid := range pids[n] {
			testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessAlive(pid) },
				fmt.Sprintf("escapee %d of %s (%s) to be gone after daemon stop", pid, n, cmdline(pid)))
		}
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/nerve-%d-*", daemon)); len(left) > 0 {
		t.Errorf("the stopped daemon left cgroups %v", left)
	}
}

func readPids(file string) []int {
	b, _ := os.ReadFile(file)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

// daemonContainment reads how the daemon contains node processes from its
// log line "daemon ready".
func daemonContainment(t *testing.T, h *nerveHome) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.home, "nerve.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"containment":"([^"]*)"`).FindAllSubmatch(b, -1)
	if len(m) == 0 {
		t.Fatalf("no containment in the daemon's log:\n%s", b)
	}
	return string(m[len(m)-1][1])
}
