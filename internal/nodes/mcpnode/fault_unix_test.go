//go:build unix

package mcpnode

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestBadmcpFaults drives each fault of fixtures/badmcp through a session:
// the faulty node ends in ERROR with a message a person can act on, the
// error of a call in flight says the same, nothing of the server's process
// group is left (the --spawn-child grandchild included), and a healthy
// node in the same session stays READY and callable.
func TestBadmcpFaults(t *testing.T) {
	tests := []struct {
		name       string
		flags      []string
		cfg        func(*config)
		opts       string // the node's options, if not the default
		call       string // a tool to call once started; "" for none
		startFails bool
		want       []string // in the ERROR reason (and the failed call or start)
	}{
		{
			name:       "exits during start",
			flags:      []string{"--mode", "crash-start", "--spawn-child"},
			startFails: true,
			want: []string{"the server exited with code 7 during start", "run it by hand to see why",
				"last lines of its stderr:", "| badmcp: crash-start: exiting before reading stdin"},
		},
		{
			name:       "exits at initialize",
			flags:      []string{"--mode", "crash-initialize", "--spawn-child"},
			startFails: true,
			want:       []string{"the server exited with code 3 during start", "| fatal: boom"},
		},
		{
			name:       "no answer to initialize, deaf to SIGTERM",
			flags:      []string{"--mode", "hang", "--ignore-term", "--spawn-child"},
			cfg:        func(c *config) { c.startTimeout = 300 * time.Millisecond },
			startFails: true,
			want: []string{"the server did not answer initialize within the start timeout of 300ms: is this an MCP server speaking stdio?",
				"--start-timeout 5m (option start_timeout)", "| child pid "},
		},
		{
			name:       "tools/list fails during start, tools required",
			flags:      []string{"--mode", "list-error", "--spawn-child"},
			opts:       `{"transport":"stdio","require_tools":true}`,
			startFails: true,
			want: []string{"the server answered initialize, but listing its tools (tools/list) failed during start: tools unavailable: database locked",
				"(internal error: the server failed while handling it; code -32603)"},
		},
		{
			name:  "garbage on stdout",
			flags: []string{"--mode", "garbage", "--spawn-child"},
			want:  []string{"the server wrote something that is not JSON-RPC on its stdout", `"this is not JSON"`, "its logs to stderr"},
		},
		{
			name:  "crash mid-call",
			flags: []string{"--mode", "crash-call", "--spawn-child"},
			call:  "boom",
			want:  []string{"the server exited with code 4 unexpectedly", "| panic: mid-call"},
		},
		{
			name:  "crash when idle",
			flags: []string{"--mode", "crash-idle", "--idle-ms", "300", "--spawn-child"},
			want:  []string{"the server exited with code 5 unexpectedly", "| badmcp: crash-idle: no message for 300ms, exiting"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := faultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			s := faultSession(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			good, err := s.Add(ctx, stdioSpec("good", badmcp(t, "--mode", "ok", "--spawn-child")))
			if err != nil {
				t.Fatalf("starting the healthy node: %v", err)
			}
			goodPid := serverPid(good)

			spec := stdioSpec("bad", badmcp(t, tt.flags...))
			if tt.opts != "" {
				spec.Options = json.RawMessage(tt.opts)
			}
			bad, err := s.Add(ctx, spec)
			if tt.startFails {
				if err == nil {
					t.Fatal("Start succeeded, want it to fail")
				}
				wantAll(t, "start error", err.Error(), tt.want)
			} else if err != nil && !strings.Contains(tt.name, "garbage") {
				// Garbage may arrive while the tools are listed, or just after.
				t.Fatalf("Start: %v", err)
			}
			if tt.call != "" {
				_, err := s.Call(ctx, "bad", &node.CallRequest{Tool: tt.call, Arguments: json.RawMessage(`{"text":"hi"}`)})
				if err == nil {
					t.Fatalf("call to %s succeeded, want it to fail", tt.call)
				}
				wantAll(t, "call error", err.Error(), append([]string{fmt.Sprintf("tool %q on node \"bad\" failed: ", tt.call)}, tt.want...))
			}
			testutil.WaitFor(t, 10*time.Second, func() bool { return bad.State() == node.Error }, "the node to go ERROR")
			info, _ := s.Info("bad")
			wantAll(t, "ERROR reason", info.Error, tt.want)

			// The node went ERROR after its group was sent SIGKILL; the
			// kernel delivers it a moment later.
			pid, kid := serverPid(bad), childPid(bad)
			if pid == 0 || kid == 0 {
				t.Fatalf("server pid %d, grandchild pid %d: want both (stderr %q)", pid, kid, bad.(*Node).StderrTail())
			}
			testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessGroupAlive(pid) && !testutil.ProcessAlive(kid) },
				fmt.Sprintf("the failed server's process group %d, its child %d included, to be gone", pid, kid))

			// The neighbour did not notice.
			if st := good.State(); st != node.Ready {
				t.Errorf("healthy node is %s, want READY", st)
			}
			if got, err := echo(ctx, s, "good", "still here"); err != nil || !strings.Contains(got, "still here") {
				t.Errorf("healthy node's echo = %q, %v", got, err)
			}
			if !testutil.ProcessGroupAlive(goodPid) {
				t.Errorf("the healthy node's server %d is gone", goodPid)
			}

			// A call to the ERROR node says how to get it back.
			tool := "echo"
			if tt.call != "" {
				tool = tt.call
			}
			_, err = s.Call(ctx, "bad", &node.CallRequest{Tool: tool})
			if err == nil || !strings.Contains(err.Error(), "`nerve node restart bad`") {
				t.Errorf("call to the ERROR node: %v, want the restart hint", err)
			}
			if err := s.Remove(ctx, "bad"); err != nil {
				t.Errorf("removing the ERROR node: %v", err)
			}
		})
	}
}

// TestStderrFloodStaysBounded: a server that writes to stderr without end
// keeps working, and nerve keeps only its last 50 lines, however much it
// writes.
func TestStderrFloodStaysBounded(t *testing.T) {
	s := faultSession(t, faultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := s.Add(ctx, stdioSpec("chatty", badmcp(t, "--mode", "stderr-flood")))
	if err != nil {
		t.Fatal(err)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	// Each flood line is about 215 bytes: wait for 20 MB of them.
	const lines = 100_000
	last := func() int {
		tail := n.(*Node).StderrTail()
		if len(tail) == 0 {
			return 0
		}
		f := strings.Fields(tail[len(tail)-1])
		if len(f) < 2 {
			return 0
		}
		i, _ := strconv.Atoi(f[1])
		return i
	}
	for i := 0; last() < lines; i++ {
		if got, err := echo(ctx, s, "chatty", strconv.Itoa(i)); err != nil || !strings.Contains(got, strconv.Itoa(i)) {
			t.Fatalf("echo %d during the flood = %q, %v", i, got, err)
		}
		if ctx.Err() != nil {
			t.Fatalf("the flood reached line %d only", last())
		}
	}
	if st := n.State(); st != node.Ready {
		t.Errorf("state %s, want READY", st)
	}
	tail := n.(*Node).StderrTail()
	if len(tail) != stderrLines {
		t.Errorf("kept %d lines, want %d", len(tail), stderrLines)
	}
	for _, l := range tail {
		if !strings.HasPrefix(l, "flood ") || len(l) > childproc.MaxStderrLine+4 {
			t.Errorf("kept line %.40q… (%d bytes)", l, len(l))
			break
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Errorf("the heap grew by %d KB while the server wrote %d lines to stderr, want it bounded", grew>>10, lines)
	}
}

// TestDaemonKilledLeavesNoOrphan SIGKILLs a process that runs a node (as
// the daemon would be) and checks that the server, its own child and the
// lifeline are all gone.
func TestDaemonKilledLeavesNoOrphan(t *testing.T) {
	cmd, line, err := testutil.StartHelper(t, helperEnv+"=daemon", daemonHelperEnv+"="+badmcp(t)[0])
	var server, child, lifeline int
	if _, serr := fmt.Sscanf(line, "pids %d %d %d", &server, &child, &lifeline); err != nil || serr != nil || server == 0 || child == 0 || lifeline == 0 {
		t.Fatalf("helper said %q (%v, %v)", line, err, serr)
	}
	for _, pid := range []int{server, child, lifeline} {
		if !testutil.ProcessAlive(pid) {
			t.Fatalf("process %d is not running before the kill", pid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return !testutil.ProcessAlive(server) && !testutil.ProcessAlive(child) && !testutil.ProcessAlive(lifeline) && !testutil.ProcessGroupAlive(server)
	}, fmt.Sprintf("server %d, its child %d and the lifeline %d to be gone", server, child, lifeline))
}

// TestStartTimeoutOption: option start_timeout bounds the start instead
// of the default: a server that answers initialize after 1.5 s fails under
// start_timeout 300ms, with a message naming the option and its value, and
// starts under start_timeout 20s.
func TestStartTimeoutOption(t *testing.T) {
	cfg := faultConfig()
	cfg.startTimeout = time.Second // the default, for this test: the option must win over it both ways
	s := faultSession(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := func(id, timeout string) node.Spec {
		sp := stdioSpec(id, badmcp(t, "--init-delay-ms", "1500"))
		sp.Options = json.RawMessage(`{"transport":"stdio","start_timeout":"` + timeout + `"}`)
		return sp
	}
	_, err := s.Add(ctx, spec("short", "300ms"))
	if err == nil {
		t.Fatal("a server slower than start_timeout started")
	}
	wantAll(t, "start error", err.Error(), []string{"did not answer initialize within the start timeout of 300ms", "--start-timeout"})
	if _, err := s.Add(ctx, spec("long", "20s")); err != nil {
		t.Fatalf("a server within start_timeout 20s (slower than the default of 1s) did not start: %v", err)
	}
}

// TestRemoveStopsEscapees: a server's child that left the server's process
// group and session with setsid() is stopped when the node is removed
// (issue 22, item 7); before, only the process group was killed and it
// lived on.
func TestRemoveStopsEscapees(t *testing.T) {
	s := faultSession(t, faultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := s.Add(ctx, stdioSpec("esc", badmcp(t, "--mode", "ok", "--setsid-child")))
	if err != nil {
		t.Fatal(err)
	}
	var kid int
	testutil.WaitFor(t, 5*time.Second, func() bool {
		for _, l := range n.(*Node).StderrTail() {
			if v, ok := strings.CutPrefix(l, "escapee pid "); ok {
				kid, _ = strconv.Atoi(v)
			}
		}
		return kid > 0
	}, "badmcp to say its escapee's pid")
	t.Cleanup(func() { syscall.Kill(kid, syscall.SIGKILL) })
	if sid, _ := unix.Getsid(kid); sid != kid {
		t.Fatalf("escapee %d is in session %d, want its own", kid, sid)
	}
	if err := s.Remove(ctx, "esc"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return !testutil.ProcessAlive(kid) },
		fmt.Sprintf("the escapee %d to be gone after node rm", kid))
}
