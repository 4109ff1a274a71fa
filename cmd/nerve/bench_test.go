//go:build linux

package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// benchHome is newHome for benchmarks.
func benchHome(b *testing.B) *nerveHome {
	bin := testutil.BuildBinary(b, "./cmd/nerve")
	home, err := os.MkdirTemp("", "nb")
	if err != nil {
		b.Fatal(err)
	}
	h := &nerveHome{bin: bin, home: home}
	h.p = pathsFor(home)
	b.Cleanup(func() {
		h.cmd("daemon", "stop").Run()
		os.RemoveAll(home)
	})
	return h
}

func mustB(b *testing.B, h *nerveHome, args ...string) string {
	b.Helper()
	cmd := h.cmd(args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("nerve %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// BenchmarkCLICall is one whole `nerve call` process against a warm daemon
// holding a persistent MCP node (server-everything).
func BenchmarkCLICall(b *testing.B) {
	h := benchHome(b)
	argv := npmfix.ServerEverything(b)
	mustB(b, h, append([]string{"node", "add", "mcp", "every", "--"}, argv...)...)
	for b.Loop() {
		out := mustB(b, h, "call", "@every", "echo", "message=hi")
		if !strings.Contains(out, "hi") {
			b.Fatalf("output %q", out)
		}
	}
}

// BenchmarkSpawnPerCall is the same call made the usual way without a
// daemon: a Go MCP client that spawns the server, calls, and stops it.
func BenchmarkSpawnPerCall(b *testing.B) {
	argv := npmfix.ServerEverything(b)
	ctx := context.Background()
	for b.Loop() {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cmd := exec.Command(argv[0], argv[1:]...)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 100 * time.Millisecond}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		cs.Close()
	}
}

func rssKB(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// BenchmarkIdleMCPNodes reports the daemon's resident memory (not its
// children's) holding 20 idle MCP nodes, and how long a daemon that starts
// again takes to restore all 20 (to READY) next to the slowest single
// start.
func BenchmarkIdleMCPNodes(b *testing.B) {
	const nodes = 20
	argv := npmfix.ServerEverything(b)
	for b.Loop() {
		h := benchHome(b)
		cmd := h.cmd("daemon", "start", "--foreground")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := client.New(client.Options{Socket: h.p.Socket})
		ctx := context.Background()
		testutil.WaitFor(b, 10*time.Second, func() bool { _, err := c.Version(ctx); return err == nil }, "the daemon")
		s := c.Session("default")
		var slowest time.Duration
		for i := range nodes {
			start := time.Now()
			if _, err := s.Add(ctx, node.Spec{ID: fmt.Sprintf("m%d", i), Kind: "mcp", Command: argv}); err != nil {
				b.Fatal(err)
			}
			slowest = max(slowest, time.Since(start))
		}
		rss := rssKB(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		c.Close()

		start := time.Now()
		cmd = h.cmd("daemon", "start", "--foreground")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c = client.New(client.Options{Socket: h.p.Socket})
		testutil.WaitFor(b, 10*time.Second, func() bool { _, err := c.Version(ctx); return err == nil }, "the daemon")
		s = c.Session("default")
		w, err := s.Subscribe(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for {
			infos, err := s.Nodes(ctx)
			if err != nil {
				b.Fatal(err)
			}
			ready := 0
			for _, i := range infos {
				if i.State == node.Ready {
					ready++
				}
			}
			if ready == nodes {
				break
			}
			if _, err := w.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
		restore := time.Since(start)
		w.Close()
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		c.Close()
		b.ReportMetric(float64(rss)/1024, "daemon-RSS-MB")
		b.ReportMetric(float64(restore.Milliseconds()), "restore-20-ms")
		b.ReportMetric(float64(slowest.Milliseconds()), "slowest-single-start-ms")
	}
}

// BenchmarkMCPServeProcess is one tools/call from an MCP client through a
// real `nerve mcp serve` process and a real daemon, to an identity node:
// the path Claude Code or Claude Desktop take with {"command": "nerve",
// "args": ["mcp", "serve"]}.
func BenchmarkMCPServeProcess(b *testing.B) {
	h := benchHome(b)
	mustB(b, h, "node", "add", "identity", "echo")
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: h.cmd("mcp", "serve")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"text": "hi"}
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo.identity", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
}

// BenchmarkOneShotRatio runs `nerve call @id identity text=hi` against a
// warm identity node and a Go hello-world binary in one interleaved loop
// (one of each per round, 200 rounds per iteration), and reports the
// medians and their ratio: the one-shot cost of nerve over the cheapest Go
// process, on whatever load the machine has at the time. `nerve version`
// and `nerve node ls` run in the same loop. Run it with -benchtime 1x and
// CGO_ENABLED=0 (docs/performance.md). NERVE_BENCH_BASELINE, if set, is
// another nerve binary (an older build) run in the same loop against the
// same daemon, so that a before and after share the machine's load. Every
// binary is run from a copy written here: how a file was written moves its
// start by up to 25% (a file the Go linker wrote through a memory map
// starts slower than the same bytes written with write(2)), so all three
// are written the same way.
func BenchmarkOneShotRatio(b *testing.B) {
	const rounds = 200
	h := benchHome(b)
	h.bin = copyBinary(b, h.bin)
	// The copy is removed before benchHome's cleanup runs: stop the daemon
	// (which it starts) while it is there.
	b.Cleanup(func() { h.cmd("daemon", "stop").Run() })
	hello := copyBinary(b, testutil.BuildBinary(b, "./cmd/nerve/testdata/hello"))
	mustB(b, h, "node", "add", "identity", "id")
	if out := mustB(b, h, "call", "@id", "identity", "text=hi"); out != "hi\n" {
		b.Fatalf("nerve call printed %q", out)
	}
	run := func(cmd *exec.Cmd) time.Duration {
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v", cmd.Path, err)
		}
		return time.Since(start)
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2])
	}
	ms := func(d float64) float64 { return d / float64(time.Millisecond) }
	baseline := os.Getenv("NERVE_BENCH_BASELINE")
	if baseline != "" {
		baseline = copyBinary(b, baseline)
	}
	commands := [][]string{{"call", "@id", "identity", "text=hi"}, {"version"}, {"node", "ls"}}
	names := []string{"call", "version", "node-ls"}
	for b.Loop() {
		var floor []time.Duration
		nerve := make([][]time.Duration, len(commands))
		base := make([][]time.Duration, len(commands))
		for range rounds {
			floor = append(floor, run(exec.Command(hello)))
			for i, args := range commands {
				nerve[i] = append(nerve[i], run(h.cmd(args...)))
				if baseline != "" {
					cmd := h.cmd(args...)
					cmd.Path, cmd.Args[0] = baseline, baseline
					base[i] = append(base[i], run(cmd))
				}
			}
		}
		mf := median(floor)
		b.ReportMetric(ms(mf), "hello-ms")
		for i, name := range names {
			mn := median(nerve[i])
			b.ReportMetric(ms(mn), "nerve-"+name+"-ms")
			if baseline != "" {
				b.ReportMetric(ms(median(base[i])), "baseline-"+name+"-ms")
			}
			if i == 0 {
				b.ReportMetric(mn/mf, "ratio")
				if baseline != "" {
					b.ReportMetric(median(base[i])/mf, "baseline-ratio")
				}
			}
		}
	}
}

// copyBinary writes a copy of the program at path into a new folder and
// returns the copy's path.
func copyBinary(b *testing.B, path string) string {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), filepath.Base(path))
	if err := os.WriteFile(p, data, 0o755); err != nil {
		b.Fatal(err)
	}
	return p
}
