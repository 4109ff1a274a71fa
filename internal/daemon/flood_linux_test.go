package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

// floodEnv makes the test binary a flooder (TestHelperFlood): ADDR,COUNT.
const floodEnv = "NERVE_TEST_FLOOD"

// TestHelperFlood is not a test: run by TestEndpointFloodSparesTheSocket
// (as another user when it can) it opens COUNT idle connections to ADDR,
// says how many it opened, and holds them until its stdin ends.
func TestHelperFlood(t *testing.T) {
	spec := os.Getenv(floodEnv)
	if spec == "" {
		t.Skip("the flooder of TestEndpointFloodSparesTheSocket")
	}
	addr, count, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(count)
	var conns []net.Conn
	failed := 0
	for range n {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			failed++
			continue
		}
		conns = append(conns, c)
	}
	fmt.Printf("opened %d failed %d uid %d\n", len(conns), failed, os.Getuid())
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	os.Exit(0)
}

// TestEndpointFloodSparesTheSocket is the repro of issue 22 item 4: another
// local user opens thousands of idle connections to the MCP endpoint, more
// than the daemon has descriptors. The owner's API on the Unix socket must
// answer meanwhile, the endpoint must still serve the owner's client, and
// the log must not fill with accept errors.
func TestEndpointFloodSparesTheSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 3,000 connections")
	}
	// The daemon gets 1,024 descriptors (3 times fewer than the flood):
	// the flood of the repro, 20,000, on a machine whose limit is 20,000.
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	const limit, flood = 1024, 3000
	if old.Max < limit {
		t.Skipf("RLIMIT_NOFILE hard limit %d < %d", old.Max, limit)
	}
	lowered := syscall.Rlimit{Cur: limit, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })

	core, logs := observer.New(zap.DebugLevel)
	p := shortPaths(t)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Registry: testRegistry(), Paths: p, Logger: zap.New(core), MCPListen: "127.0.0.1:0"}, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	defer func() { cancel(); <-done }()
	c := client.New(client.Options{Socket: p.Socket})
	defer c.Close()
	s := c.Session(DefaultSession)
	if _, err := s.Add(t.Context(), node.Spec{ID: "echo", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	ep, err := s.MCPEndpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(ep.URL, "http://")
	addr, _, _ = strings.Cut(addr, "/")

	cmd := flooder(t, addr, flood)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the flooder: %v", err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the flooder said nothing: %v", err)
	}
	t.Logf("flooder: %s", strings.TrimSpace(line))
	var opened, failed, floodUID int
	if _, err := fmt.Sscanf(line, "opened %d failed %d uid %d", &opened, &failed, &floodUID); err != nil {
		t.Fatalf("the flooder said %q: %v", line, err)
	}

	// The owner's API answers while the flood holds its connections: each
	// probe a new connection, as each `nerve node ls` is a new process.
	for i := range 10 {
		pc := client.New(client.Options{Socket: p.Socket})
		ps := pc.Session(DefaultSession)
		cctx, ccancel := context.WithTimeout(t.Context(), 5*time.Second)
		start := time.Now()
		_, err := ps.Nodes(cctx)
		if err == nil {
			var res *mcp.CallToolResult
			res, err = mcpclient.Call(cctx, ps, "echo", "identity", []byte(`{"text":"still here"}`), nil)
			if err == nil && res.IsError {
				err = fmt.Errorf("the call failed: %s", node.ResultText(res, 200))
			}
		}
		ccancel()
		pc.Close()
		if err != nil {
			t.Fatalf("node ls and call #%d over the Unix socket during the flood: %v (after %v)", i, err, time.Since(start))
		}
	}
	// The owner's MCP client gets through the flood too.
	if status := initialize(t, ep.URL, ep.Token); status != http.StatusOK {
		t.Errorf("initialize with the token during the flood: status %d", status)
	}
	if n := openFDs(t); n >= limit-16 {
		t.Errorf("the daemon holds %d descriptors of %d during the flood", n, limit)
	}
	reports := 0
	for _, e := range logs.All() {
		if msg := e.Message; strings.Contains(msg, "too many open files") || strings.Contains(msg, "Accept error") {
			t.Fatalf("the log has %q", msg)
		}
		if strings.Contains(e.Message, "turning connections away") {
			reports++
			// The flood is told apart by its user, not its address.
			if want := "uid " + strconv.Itoa(floodUID); e.ContextMap()["most_from"] != want {
				t.Errorf("the report says the flood came from %v, want %s", e.ContextMap()["most_from"], want)
			}
		}
	}
	if reports != 1 {
		t.Errorf("the log reports the flood %d times, want once (at most once a minute)", reports)
	}
}

// flooder is the command running TestHelperFlood: as user nobody (65534)
// when this test runs as root and setpriv is there, else as this user.
func flooder(t *testing.T, addr string, n int) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=^TestHelperFlood$", "-test.count=1"}
	env := append(os.Environ(), fmt.Sprintf("%s=%s,%d", floodEnv, addr, n))
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		t.Log("the flood comes from this user (another one needs root and setpriv)")
		return exec.Command(exe, args...)
	}
	// Another user cannot read the go test cache: give it a copy.
	dir, err := os.MkdirTemp("", "flood")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	copyExe := filepath.Join(dir, "flood.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyExe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", copyExe}, args...)...)
	cmd.Env = append(env, "HOME="+dir)
	cmd.Dir = dir
	return cmd
}

// initialize posts an MCP initialize with the token and returns the status.
func initialize(t *testing.T, url, token string) int {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"owner","version":"1"}}}`
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("initialize with the token during the flood: %v", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
