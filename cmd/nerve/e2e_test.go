//go:build linux

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// nerveHome is one user's nerve: a NERVE_HOME and the binary.
type nerveHome struct {
	t    *testing.T
	bin  string
	home string
	p    paths.Paths
}

func newHome(t *testing.T) *nerveHome {
	t.Helper()
	bin := testutil.BuildBinary(t, "./cmd/nerve")
	// A short folder: a Unix socket path must stay under ~100 bytes.
	home, err := os.MkdirTemp("", "ne")
	if err != nil {
		t.Fatal(err)
	}
	h := &nerveHome{t: t, bin: bin, home: home, p: pathsFor(home)}
	t.Cleanup(func() {
		h.run("daemon", "stop")
		os.RemoveAll(home)
	})
	return h
}

func pathsFor(home string) paths.Paths {
	p, _ := paths.FromEnv(func(k string) string {
		if k == "NERVE_HOME" {
			return home
		}
		return ""
	})
	return p
}

func (h *nerveHome) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, args...)
	cmd.Env = append(os.Environ(), "NERVE_HOME="+h.home, "NERVE_SESSION=")
	cmd.Dir = h.home
	return cmd
}

func (h *nerveHome) run(args ...string) (stdout, stderr string, code int) {
	cmd := h.cmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		h.t.Fatalf("running nerve %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// must runs nerve and fails the test unless it exits 0.
func (h *nerveHome) must(args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("nerve %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func (h *nerveHome) daemonPID() int {
	h.t.Helper()
	var st struct {
		Daemon struct{ PID int } `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(h.must("daemon", "status", "--json")), &st); err != nil || st.Daemon.PID == 0 {
		h.t.Fatalf("daemon status: %v", err)
	}
	return st.Daemon.PID
}

func (h *nerveHome) nodes() map[string]node.Info {
	h.t.Helper()
	var infos []node.Info
	if err := json.Unmarshal([]byte(h.must("node", "ls", "--json")), &infos); err != nil {
		h.t.Fatal(err)
	}
	m := map[string]node.Info{}
	for _, i := range infos {
		m[i.ID] = i
	}
	return m
}

// sessionMembers returns the live processes in the session led by sid:
// the daemon runs in a session of its own, so every process it started
// (and theirs) is in it unless it left on purpose.
func sessionMembers(sid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// state ppid pgrp session
		if len(f) > 3 && f[0] != "Z" && f[3] == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// nodeGroups returns the process groups of the nodes' processes (bash and
// mcp nodes report their child's pid, which leads its own group).
func (h *nerveHome) nodeGroups() []int {
	var pids []int
	for _, i := range h.nodes() {
		if pid, ok := i.Details["pid"].(float64); ok && pid > 0 {
			pids = append(pids, int(pid))
		}
	}
	return pids
}

// gone reports whether the daemon's session and every node's process
// group have no live process left.
func gone(sid int, groups []int) bool {
	if len(sessionMembers(sid)) > 0 {
		return false
	}
	for _, g := range groups {
		if testutil.ProcessGroupAlive(g) {
			return false
		}
	}
	return true
}

func hasKind(h *nerveHome, kind string) bool {
	return strings.Contains(h.must("node", "kinds"), kind+"\n")
}

// The daemon starts on demand, keeps nodes across a second process, comes
// back after SIGKILL with the same specs, and leaves no process behind.
func TestDaemonLifecycle(t *testing.T) {
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	if out := h.must("call", "@echo", "from", "a", "second", "process"); out != "from a second process\n" {
		t.Errorf("call output %q", out)
	}
	withBash := hasKind(h, "bash")
	if withBash {
		h.must("node", "add", "bash", "sh")
		h.must("call", "@sh", "export", "NERVE_MARK=1")
		if out := h.must("call", "@sh", "echo ${NERVE_MARK:-unset}"); !strings.Contains(out, "1") {
			t.Errorf("bash lost its variable between calls: %q", out)
		}
	} else {
		t.Log("TODO: the bash kind is not registered in this build; its part is left out")
	}
	withMCP := hasKind(h, "mcp")
	if withMCP {
		argv := npmfix.ServerEverything(t)
		h.must(append([]string{"node", "add", "mcp", "every", "--"}, argv...)...)
		if out := h.must("call", "@every", "echo", "message=hi"); !strings.Contains(out, "hi") {
			t.Errorf("mcp echo: %q", out)
		}
	}
	before := h.nodes()
	spec := h.must("node", "info", "echo", "--json")

	pid, groups := h.daemonPID(), h.nodeGroups()
	t.Logf("daemon %d, node process groups %v", pid, groups)
	if withBash && len(groups) == 0 {
		t.Fatal("no node reports its process id: the orphan check would prove nothing")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return gone(pid, groups) }, "the killed daemon's processes to end")

	// The next command starts a new daemon, which restores every node.
	if out := h.must("call", "@echo", "back"); out != "back\n" {
		t.Errorf("call after restart: %q", out)
	}
	if newPID := h.daemonPID(); newPID == pid {
		t.Fatal("the daemon was not restarted")
	}
	if withBash {
		if out := h.must("call", "@sh", "echo ${NERVE_MARK:-unset}"); !strings.Contains(out, "unset") {
			t.Errorf("@sh after restart should be a fresh shell: %q", out)
		}
	}
	for id := range before {
		h.must("tools", id) // waits while the node is still starting
	}
	after := h.nodes()
	for id, b := range before {
		a, ok := after[id]
		// An mcp node with a tool catalogue comes back lazily: CREATED
		// with its tools listed, started by its first call.
		lazy, _ := a.Details["lazy"].(bool)
		if !ok || a.Kind != b.Kind || a.Tools != b.Tools || (a.State != node.Ready && a.State != node.Busy && !(lazy && a.State == node.Created)) {
			t.Errorf("node %s after restart: %+v (before %+v)", id, a, b)
		}
	}
	var d1, d2 struct{ Spec node.Spec }
	json.Unmarshal([]byte(spec), &d1)
	json.Unmarshal([]byte(h.must("node", "info", "echo", "--json")), &d2)
	if fmt.Sprint(d1.Spec) != fmt.Sprint(d2.Spec) {
		t.Errorf("spec changed across restart: %+v → %+v", d1.Spec, d2.Spec)
	}

	// SIGTERM: every node stops and the daemon exits (each stop is
	// bounded: close stdin, SIGTERM, SIGKILL after the grace).
	pid, groups = h.daemonPID(), h.nodeGroups()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { return gone(pid, groups) }, "the daemon and its nodes to exit after SIGTERM")
	if _, err := os.Stat(h.p.Socket); !os.IsNotExist(err) {
		t.Errorf("socket left after SIGTERM: %v", err)
	}
	if !withMCP {
		t.Log("TODO: the mcp kind is not registered in this build; the MCP node part is left out")
	}
}

// A daemon started from a binary that is then deleted (as `go run` does)
// keeps working: it never needs its own path again.
func TestDaemonOutlivesItsBinary(t *testing.T) {
	h := newHome(t)
	dir := t.TempDir()
	tmpBin := filepath.Join(dir, "nerve")
	data, err := os.ReadFile(h.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmpBin, data, 0o700); err != nil {
		t.Fatal(err)
	}
	orig := h.bin
	h.bin = tmpBin
	h.must("node", "add", "identity", "echo")
	os.Remove(tmpBin)
	h.bin = orig
	if out := h.must("call", "@echo", "still", "here"); out != "still here\n" {
		t.Errorf("call after the binary was deleted: %q", out)
	}
	h.must("node", "restart", "echo")
	h.must("daemon", "stop")
}

func TestSocketSecurity(t *testing.T) {
	h := newHome(t)
	h.must("daemon", "start")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{h.p.Runtime, 0o700}, {h.p.Socket, 0o600}, {h.p.State, 0o700}, {h.p.Sessions, 0o700}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v; want %v", c.path, fi.Mode().Perm(), c.mode)
		}
	}
	if os.Getuid() != 0 {
		t.Skip("running a client as another user needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	testutil.RequireE2E(t, "setpriv", err)
	// nobody needs to run the binary and reach the socket: copy the
	// binary somewhere public, and open the folders — leaving the uid
	// check as the only guard.
	pub, err := os.MkdirTemp("", "npub")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pub)
	os.Chmod(pub, 0o755)
	data, _ := os.ReadFile(h.bin)
	pubBin := filepath.Join(pub, "nerve")
	os.WriteFile(pubBin, data, 0o755)
	asNobody := func() (string, int) {
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", pubBin, "node", "ls")
		cmd.Env = []string{"NERVE_HOME=" + h.home, "PATH=/usr/bin:/bin", "HOME=/nonexistent"}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	// With the folders as nerve makes them, nobody cannot even connect.
	out, code := asNobody()
	if code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("nobody with private folders: exit %d, %q; want a refusal", code, out)
	}
	for _, p := range []string{h.home, h.p.Runtime} {
		os.Chmod(p, 0o755)
	}
	os.Chmod(h.p.Socket, 0o777)
	out, code = asNobody()
	if code != 1 || !strings.Contains(out, "uid 65534 may not use the nerve daemon of uid 0") {
		t.Errorf("nobody with open folders: exit %d, %q; want the daemon to refuse uid 65534", code, out)
	}
}

// SIGKILL at random points while specs change: every restart reads a
// valid state file holding every acknowledged change.
func TestCrashSafety(t *testing.T) {
	h := newHome(t)
	const kills = 50
	const workers = 4
	// present[id] is the last acknowledged state of node id; ids whose
	// change was in flight at the kill are unknown and not checked.
	present := map[string]bool{}
	var mu sync.Mutex
	seq, acked := 0, 0
	stateFile := filepath.Join(h.p.Sessions, "default.json")
	for round := range kills {
		cmd := h.cmd("daemon", "start", "--foreground")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := client.New(client.Options{Socket: h.p.Socket})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// Each try on its own short deadline: one connection caught in
		// the moment the daemon starts must not use up the whole wait.
		testutil.WaitFor(t, 30*time.Second, func() bool {
			tctx, tcancel := context.WithTimeout(ctx, time.Second)
			defer tcancel()
			_, err := c.Version(tctx)
			return err == nil
		}, "the daemon to answer")
		s := c.Session("default")
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					var id string
					var add bool
					// Remove a known node a third of the time, else add one.
					if r.IntN(3) == 0 {
						for k, v := range present {
							if v && strings.HasPrefix(k, fmt.Sprintf("w%d-", w)) {
								id = k
								break
							}
						}
					}
					if id == "" {
						seq++
						id, add = fmt.Sprintf("w%d-%d", w, seq), true
					}
					delete(present, id) // unknown until acknowledged
					mu.Unlock()
					var err error
					if add {
						_, err = s.Add(ctx, node.Spec{ID: id, Kind: "identity"})
					} else {
						err = s.Remove(ctx, id)
					}
					if err != nil {
						return // the daemon died mid-request: outcome unknown
					}
					mu.Lock()
					present[id] = add
					acked++
					mu.Unlock()
				}
			})
		}
		// Let a change land (a loaded machine may take a while), then
		// kill at a random moment.
		mu.Lock()
		before := acked
		mu.Unlock()
		testutil.WaitFor(t, 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return acked > before }, "a change to be acknowledged")
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		close(stop)
		wg.Wait()
		cancel()
		c.Close()

		data, err := os.ReadFile(stateFile)
		if errors.Is(err, os.ErrNotExist) && len(present) == 0 {
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var st struct{ Nodes []node.Spec }
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("round %d: state file is not valid JSON: %v\n%s", round, err, data)
		}
		saved := map[string]bool{}
		for _, sp := range st.Nodes {
			saved[sp.ID] = true
		}
		mu.Lock()
		var wrong []string
		for id, want := range present {
			if saved[id] != want {
				wrong = append(wrong, fmt.Sprintf("%s (acknowledged present=%v)", id, want))
			}
		}
		mu.Unlock()
		sort.Strings(wrong)
		if len(wrong) > 0 {
			t.Fatalf("round %d: state file disagrees with acknowledged changes: %v", round, wrong)
		}
	}
	if matches, _ := filepath.Glob(stateFile + ".corrupt-*"); len(matches) > 0 {
		t.Errorf("a state file was found corrupt: %v", matches)
	}
	mu.Lock()
	t.Logf("%d acknowledged changes over %d kills", acked, kills)
	if acked < kills {
		t.Errorf("only %d changes were acknowledged: the test did not exercise saving", acked)
	}
	mu.Unlock()
}
