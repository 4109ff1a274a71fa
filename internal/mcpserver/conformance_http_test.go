package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// upstreamPatch is the change to the Go SDK nerve proposes upstream
// (docs/design/upstream/README.md): its everything-server keeps events, so
// that test_reconnection, which closes its stream mid-call, can be resumed.
const upstreamPatch = "../../docs/design/upstream/go-sdk-close-sse-stream.patch"

// everythingServerResumable builds the Go SDK's conformance
// everything-server with upstreamPatch applied, from a copy of the SDK in
// the module cache (which is read-only, and which -overlay may not
// replace).
func everythingServerResumable(t testing.TB) string {
	t.Helper()
	src := t.TempDir()
	if err := os.CopyFS(src, os.DirFS(sdkDir(t))); err != nil {
		t.Fatalf("copying the Go SDK: %v", err)
	}
	patch, err := filepath.Abs(upstreamPatch)
	if err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"git", "init", "-q"}, {"git", "apply", "--exclude=*_test.go", patch}} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			testutil.RequireE2E(t, "git, to apply the upstream patch to the Go SDK", err)
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	bin := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", bin, "./conformance/everything-server")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the patched everything-server: %v\n%s", err, out)
	}
	return bin
}

// everythingHTTP runs bin on streamable HTTP, stateful (sessions, a
// standalone stream, requests to the client), as the Go SDK's own
// conformance script does, on a free port until the test ends, and
// returns its URL.
func everythingHTTP(t testing.TB, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-http", addr, "-stateless=false")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the everything-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/"
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything-server did not listen on %s within 30s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scenarioRE matches a scenario's line in the suite's summary.
var scenarioRE = regexp.MustCompile(`(?m)^\s*[✓✗] (\S+): (\d+) passed, (\d+) failed`)

// failedChecks returns, for each scenario in the suite's summary, how many
// of its checks failed (warnings are not failures).
func failedChecks(out string) map[string]int {
	if i := strings.Index(out, "=== SUMMARY ==="); i >= 0 {
		out = out[i:]
	}
	m := map[string]int{}
	for _, s := range scenarioRE.FindAllStringSubmatch(out, -1) {
		m[s[1]], _ = strconv.Atoi(s[3])
	}
	return m
}

// repeatSuite runs the whole suite against target runs times and logs,
// for each scenario, the runs in which none of its checks failed.
func repeatSuite(t *testing.T, target string, runs int) {
	t.Helper()
	passed := map[string]int{}
	for i := range runs {
		out, _ := runSuite(t, target, "--suite", "all")
		failed := failedChecks(out)
		if len(failed) == 0 {
			t.Fatalf("run %d: no summary from the conformance suite:\n%s", i+1, out)
		}
		for sc, n := range failed {
			if n == 0 {
				passed[sc]++
			} else if _, ok := passed[sc]; !ok {
				passed[sc] = 0 // listed even if it never passes
			}
		}
	}
	for _, sc := range slices.Sorted(maps.Keys(passed)) {
		t.Logf("%-40s %d/%d", sc, passed[sc], runs)
	}
}

// runSuite runs the conformance suite's server side against target.
func runSuite(t testing.TB, target string, args ...string) (string, error) {
	t.Helper()
	suite := npmfix.Conformance(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite[0], append(append(suite[1:], "server", "--url", target), args...)...)
	cmd.Dir = t.TempDir() // results/ lands there
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestConformanceNodeModeHTTP is TestConformanceNodeMode with the
// everything-server behind an http node instead of a stdio one: what a
// node delivers must not depend on its transport (issue 27 item 3). The
// server is the Go SDK's, with the change nerve proposes upstream (it
// keeps events, so a stream it closes mid-call can be resumed; without it
// the result of test_reconnection is lost for every client).
//
// NERVE_CONFORMANCE_RUNS=N runs the whole suite N times instead and counts,
// for each scenario, the runs in which none of its checks failed;
// NERVE_CONFORMANCE_STOCK=1 uses the everything-server as released.
func TestConformanceNodeModeHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite: slow")
	}
	npmfix.Conformance(t)
	bin := everythingServerResumable(t)
	if os.Getenv("NERVE_CONFORMANCE_STOCK") != "" {
		bin = everythingServer(t) // as released, for comparison
	}
	url := everythingHTTP(t, bin)
	s := newSession(t)
	opts, _ := json.Marshal(map[string]string{"transport": "http", "url": url})
	addNode(t, s, node.Spec{ID: "x", Kind: "mcp", Options: opts})
	ep := startEndpoint(t, s)
	target := tokenProxy(t, "http://"+ep.Addr(), ep.Token()) + "/mcp/test/node/x"

	if runs, _ := strconv.Atoi(os.Getenv("NERVE_CONFORMANCE_RUNS")); runs > 0 {
		repeatSuite(t, target, runs)
		return
	}

	baseline, _ := filepath.Abs("testdata/conformance-expected-failures.yml")
	out, err := runSuite(t, target, "--suite", "all", "--expected-failures", baseline)
	summary := out
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	m := totalRE.FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no summary from the conformance suite (%v):\n%s", err, out)
	}
	t.Logf("conformance server --suite all through an http node: %s checks passed, %s failed (baseline: testdata/conformance-expected-failures.yml)", m[1], m[2])
	if err != nil {
		t.Errorf("conformance failures (exit %v):\n%s", err, summary)
	}

	// server-sse-polling is in the baseline for two SHOULD warnings of
	// nerve's own endpoint, and a baseline lets any failure of it pass:
	// check it alone. Through the node, test_reconnection's stream is
	// closed mid-call and resumed, and its result must reach the suite.
	out, _ = runSuite(t, target, "--scenario", "server-sse-polling", "--verbose")
	if !strings.Contains(out, "0 failed") || !strings.Contains(out, "Received tool response on POST stream") {
		t.Errorf("server-sse-polling through an http node:\n%s", out)
	}
}
