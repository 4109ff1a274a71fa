package mcpserver

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// sdkDir is the Go SDK in the module cache; its conformance "everything"
// server is built from there, never copied into this repository.
func sdkDir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		testutil.RequireE2E(t, "the Go SDK in the module cache", err)
	}
	return dir
}

// everythingServer builds the Go SDK's conformance server into a temp dir.
func everythingServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", bin, "./conformance/everything-server")
	cmd.Dir = sdkDir(t)
	// The module cache is read-only and offline: build with what it holds.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		testutil.RequireE2E(t, "the Go SDK's conformance everything-server", err)
		t.Fatalf("building the everything-server: %v\n%s", err, out)
	}
	return bin
}

// tokenProxy serves target on 127.0.0.1 adding the bearer token, and
// keeps Host and Origin as the client sent them so the endpoint's
// DNS-rebinding checks still face the client. The conformance suite has
// no way to send a header.
func tokenProxy(t testing.TB, target, token string) string {
	t.Helper()
	u, _ := url.Parse(target)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	ts := httptest.NewServer(rp)
	t.Cleanup(ts.Close)
	return ts.URL
}

var totalRE = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)

// TestConformanceNodeMode runs the official conformance suite (server
// side, --suite all) against the HTTP form of `nerve mcp serve --node X`,
// where X is the Go SDK's conformance everything-server behind an mcp
// node: every scenario that passes against the server directly must pass
// through nerve.
func TestConformanceNodeMode(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite: slow")
	}
	suite := npmfix.Conformance(t)
	bin := everythingServer(t)
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "x", Kind: "mcp", Command: []string{bin}})
	ep := startEndpoint(t, s)
	base := tokenProxy(t, "http://"+ep.Addr(), ep.Token())
	target := base + "/mcp/test/node/x"
	if runs, _ := strconv.Atoi(os.Getenv("NERVE_CONFORMANCE_RUNS")); runs > 0 {
		repeatSuite(t, target, runs) // see TestConformanceNodeModeHTTP
		return
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	baseline, _ := filepath.Abs("testdata/conformance-expected-failures.yml")
	args := []string{"server", "--url", target, "--suite", "all", "--expected-failures", baseline}
	if sc := os.Getenv("NERVE_CONFORMANCE_SCENARIO"); sc != "" {
		args = []string{"server", "--url", target, "--scenario", sc, "--verbose"} // one scenario, for debugging
	}
	cmd := exec.CommandContext(ctx, suite[0], append(suite[1:], args...)...)
	cmd.Dir = t.TempDir() // results/ lands there
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	if err != nil {
		summary += whyFailed(filepath.Join(cmd.Dir, "results"))
	}
	m := totalRE.FindStringSubmatch(summary)
	if os.Getenv("NERVE_CONFORMANCE_SCENARIO") != "" {
		t.Logf("%s", out)
	}
	if m == nil {
		t.Fatalf("no summary from the conformance suite (%v):\n%s", err, out)
	}
	t.Logf("conformance server --suite all through nerve --node: %s checks passed, %s failed (baseline: testdata/conformance-expected-failures.yml)", m[1], m[2])
	if err != nil {
		t.Errorf("conformance failures (exit %v):\n%s", err, summary)
	}
}
