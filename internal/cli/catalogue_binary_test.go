//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// servers returns the pids of the daemon's children that run
// server-everything, and their total resident memory in KB.
func servers(daemonPID int) (pids []int, rssKB int) {
	for _, pid := range testutil.ChildrenOf(daemonPID) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.Contains(string(cmd), "server-everything") {
			continue
		}
		pids = append(pids, pid)
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status); m != nil {
			kb, _ := strconv.Atoi(string(m[1]))
			rssKB += kb
		}
	}
	return pids, rssKB
}

// TestBinaryCatalogueLazyStart: 20 server-everything nodes; after a daemon
// SIGKILL the restarted daemon answers `nerve tools` and `tools/list` from
// the nodes' catalogues before any server runs; the first call to a node
// starts that server only; two concurrent first calls start one process;
// an idle node stops and its next call starts it again; `nerve node sync`
// refreshes a catalogue and leaves a stopped node stopped.
func TestBinaryCatalogueLazyStart(t *testing.T) {
	n := newRealNerve(t)
	every := npmfix.ServerEverything(t)
	const count = 20
	servers20 := map[string]any{}
	for i := 1; i <= count; i++ {
		servers20[fmt.Sprintf("e%02d", i)] = map[string]any{"command": every[0], "args": every[1:]}
	}
	conf, _ := json.Marshal(map[string]any{"mcpServers": servers20})
	confPath := filepath.Join(n.home, "mcp.json")
	os.WriteFile(confPath, conf, 0o600)
	n.Must("mcp", "import", confPath)
	pid := daemonPID(t, n)
	eagerPIDs, eagerRSS := servers(pid)
	if len(eagerPIDs) != count {
		t.Fatalf("%d servers run after the import, want %d", len(eagerPIDs), count)
	}
	toolsPerNode := strings.Count(n.Must("tools", "e01"), "\n")

	// SIGKILL: the servers die with the daemon (Pdeathsig).
	syscall.Kill(pid, syscall.SIGKILL)
	testutil.WaitFor(t, 20*time.Second, func() bool {
		for _, p := range eagerPIDs {
			if testutil.ProcessAlive(p) {
				return false
			}
		}
		return true
	}, "the servers to die with the daemon")

	start := time.Now()
	out := n.Must("tools") // starts the daemon, which restores the session
	listed := time.Since(start)
	pid = daemonPID(t, n)
	for i := 1; i <= count; i++ {
		if c := strings.Count(out, fmt.Sprintf("e%02d.", i)); c != toolsPerNode {
			t.Errorf("nerve tools after the restart lists %d tools of e%02d, want %d", c, i, toolsPerNode)
		}
	}
	if p, _ := servers(pid); len(p) != 0 {
		t.Errorf("%d servers started with the daemon; want none before a call", len(p))
	}
	if ls := n.Must("node", "ls"); !regexp.MustCompile(`(?m)^e05\s+mcp\s+CREATED\s+\d+.*lazy, tools cached`).MatchString(ls) {
		t.Errorf("node ls does not show e05 as lazy with cached tools:\n%s", ls)
	}

	// tools/list through nerve mcp serve: every tool at once.
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(ctx, nil)
	serveList := time.Since(t0)
	cs.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, tl := range res.Tools {
		if regexp.MustCompile(`^e\d\d\.`).MatchString(tl.Name) {
			got++
		}
	}
	if got != count*toolsPerNode {
		t.Errorf("tools/list through nerve mcp serve: %d tools of the e nodes, want %d", got, count*toolsPerNode)
	}
	if p, _ := servers(pid); len(p) != 0 {
		t.Errorf("listing started %d servers", len(p))
	}

	// The first call starts that server only.
	t1 := time.Now()
	if out := n.Must("call", "@e01", "echo", "message=first"); !strings.Contains(out, "first") {
		t.Errorf("first call: %q", out)
	}
	firstCall := time.Since(t1)
	t1 = time.Now()
	n.Must("call", "@e01", "echo", "message=warm")
	warmCall := time.Since(t1)
	if p, _ := servers(pid); len(p) != 1 {
		t.Errorf("%d servers run after the first call to e01, want 1", len(p))
	}
	// Two concurrent first calls start one process.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { n.Must("call", "@e02", "echo", "message=together") })
	}
	wg.Wait()
	lazyPIDs, lazyRSS := servers(pid)
	if len(lazyPIDs) != 2 {
		t.Errorf("%d servers after two concurrent first calls to e02, want 2 (e01, e02)", len(lazyPIDs))
	}
	t.Logf("20 servers: eager %d MB resident in %d processes; lazy after two nodes were used %d MB in %d; daemon start to nerve tools %v; tools/list through nerve mcp serve %v; nerve call to a lazy node %v, warm %v",
		eagerRSS/1024, len(eagerPIDs), lazyRSS/1024, len(lazyPIDs), listed.Round(time.Millisecond), serveList.Round(time.Millisecond), firstCall.Round(time.Millisecond), warmCall.Round(time.Millisecond))
	if lazyRSS*5 > eagerRSS {
		t.Errorf("lazy servers hold %d KB, more than 1/5 of eager's %d KB", lazyRSS, eagerRSS)
	}

	// sync: a stopped node's catalogue is refreshed, the node stays stopped.
	if out := n.Must("node", "sync", "e03"); !strings.Contains(out, fmt.Sprintf("synced e03: %d tools", toolsPerNode)) {
		t.Errorf("node sync e03: %q", out)
	}
	if p, _ := servers(pid); len(p) != 2 {
		t.Errorf("%d servers after node sync e03, want 2: sync stops a node that was not running", len(p))
	}

	// Idle stop: after 1 s without a call the server stops; the next call
	// starts it again.
	n.Must(append([]string{"node", "add", "mcp", "idler", "--option", "idle=1s", "--"}, every...)...)
	n.Must("call", "@idler", "echo", "message=once")
	testutil.WaitFor(t, 20*time.Second, func() bool {
		return regexp.MustCompile(`(?m)^idler\s+mcp\s+STOPPED`).MatchString(n.Must("node", "ls"))
	}, "idler to stop after 1s without a call")
	if out := n.Must("call", "@idler", "echo", "message=again"); !strings.Contains(out, "again") {
		t.Errorf("a call to the idle-stopped node: %q", out)
	}
}

// TestBinarySessionIdle: `nerve session set idle` stops every MCP server
// left unused that long (keeping its tools listed) and survives a daemon
// restart; the next call starts the server again.
func TestBinarySessionIdle(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "fx", "--", server)
	if out := n.Must("session", "set", "idle", "1s"); !strings.Contains(out, "unused for 1s stops") {
		t.Errorf("session set idle: %q", out)
	}
	n.Must("call", "@fx", "echo", "text=once")
	testutil.WaitFor(t, 20*time.Second, func() bool {
		return regexp.MustCompile(`(?m)^fx\s+mcp\s+STOPPED\s+13\b`).MatchString(n.Must("node", "ls"))
	}, "fx to stop after 1s without a call, its 13 tools still listed")
	if out := n.Must("call", "@fx", "echo", "text=again"); out != "again\n" {
		t.Errorf("a call to the idle-stopped node: %q", out)
	}
	n.Must("daemon", "stop")
	if out := n.Must("session", "show"); !strings.Contains(out, "idle  1s") {
		t.Errorf("session show after a daemon restart: %q", out)
	}
	_, errs, code := n.Run("session", "set", "idle", "soon")
	if code != ExitUsage || !strings.Contains(errs, "use a duration such as 10m") {
		t.Errorf("session set idle soon: exit %d %q", code, errs)
	}
}

// TestBinaryStaleCatalogue: a catalogue that no longer matches the server
// is harmless. A tool only the catalogue knows gets the unknown-tool error
// with did-you-mean from the live list; a tool only the server knows is
// called.
func TestBinaryStaleCatalogue(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "fx", "--", server)
	n.Must("daemon", "stop")
	p := filepath.Join(n.home, "sessions", "default", "nodes", "fx", "catalog.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(strings.Replace(string(b), `"name":"echo"`, `"name":"echoo"`, 1)), 0o600)
	if out := n.Must("tools", "fx"); !strings.Contains(out, "fx.echoo") {
		t.Fatalf("the edited catalogue is not what is listed:\n%s", out)
	}
	_, errs, code := n.Run("call", "@fx", "echoo", "text=x")
	if code != ExitUsage || !strings.Contains(errs, `"echoo"`) || !strings.Contains(errs, "did you mean") || !strings.Contains(errs, "echo") {
		t.Errorf("a tool only the stale catalogue has: exit %d, %q", code, errs)
	}
	if out := n.Must("call", "@fx", "echo", "text=live"); out != "live\n" {
		t.Errorf("a tool only the server has: %q", out)
	}
}

// TestBinaryGraphStartsLazyNode: a graph step that calls a lazy node (not
// running, tools from its catalogue) starts it like any other call.
func TestBinaryGraphStartsLazyNode(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "fx", "--", server)
	def := filepath.Join(n.home, "g.yaml")
	os.WriteFile(def, []byte("steps:\n  say: {call: fx.echo, args: {text: from the graph}}\n"), 0o600)
	n.Must("graph", "add", "g", "--from", def)
	n.Must("daemon", "stop")
	if ls := n.Must("node", "ls"); !regexp.MustCompile(`(?m)^fx\s+mcp\s+CREATED`).MatchString(ls) {
		t.Fatalf("fx is not lazy after the restart:\n%s", ls)
	}
	if out := n.Must("call", "@g", "run"); out != "from the graph\n" {
		t.Errorf("graph calling a lazy node: %q", out)
	}
	if ls := n.Must("node", "ls"); !regexp.MustCompile(`(?m)^fx\s+mcp\s+READY`).MatchString(ls) {
		t.Errorf("fx did not start for the graph's call:\n%s", ls)
	}
}
