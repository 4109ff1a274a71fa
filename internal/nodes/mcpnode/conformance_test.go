package mcpnode

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/gosdkfix"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// TestConformanceClientCore runs the official MCP conformance suite's
// client scenarios (--suite core) against fixtures/conformance-client,
// which connects through this node kind, OAuth included. Known failures
// are listed in fixtures/conformance-client/expected-failures.yml (none
// with suite 0.1.16); the suite exits non-zero on any other failure and on
// a listed scenario that passes.
func TestConformanceClientCore(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite takes a few seconds")
	}
	suite := npmfix.Conformance(t)
	client := testutil.BuildBinary(t, "./fixtures/conformance-client")
	baseline := filepath.Join(testutil.RepoRoot(t), "fixtures", "conformance-client", "expected-failures.yml")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	outDir := t.TempDir()
	args := append(suite[1:], "client", "--command", client, "--suite", "core",
		"--expected-failures", baseline, "-o", outDir)
	cmd := exec.CommandContext(ctx, suite[0], args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUITE SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("%s", summary)
	lateOnly := false
	if err != nil {
		lateOnly = onlyLateReconnect(t, outDir)
		if !lateOnly {
			t.Fatalf("conformance suite failed: %v", err)
		}
	}
	for _, s := range []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
		"auth/metadata-default", "auth/basic-cimd", "auth/pre-registration", "auth/scope-step-up", "auth/token-endpoint-auth-basic"} {
		if !strings.Contains(summary, "✓ "+s+":") && !(lateOnly && s == "sse-retry") {
			t.Errorf("scenario %s did not pass", s)
		}
	}
}

// TestConformanceClientBeyondCore runs the suite's client scenarios
// outside --suite core that nerve passes: the client-credentials
// extension (machines and CI: oauth grant client_credentials, no person
// signs in) with a client secret and with a private key
// (private_key_jwt), a server of MCP 2025-03-26, which
// predates protected resource metadata and names another issuer in the
// authorization server metadata at its root, and enterprise-managed
// authorization (SEP-990, oauth grant enterprise).
func TestConformanceClientBeyondCore(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite takes a few seconds")
	}
	suite := npmfix.Conformance(t)
	client := testutil.BuildBinary(t, "./fixtures/conformance-client")
	for _, scenario := range []string{"auth/client-credentials-basic", "auth/client-credentials-jwt", "auth/2025-03-26-oauth-metadata-backcompat",
		"auth/cross-app-access-complete-flow"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append(suite[1:len(suite):len(suite)], "client", "--command", client, "--scenario", scenario, "-o", t.TempDir())
			cmd := exec.CommandContext(ctx, suite[0], args...)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OVERALL: PASSED") {
				t.Fatalf("%s: %v\n%s", scenario, err, out)
			}
		})
	}
}

// TestConformanceClientNewest runs every client scenario of the newest
// suite (fixtures/conformance-next: protocol 2026-07-28 and the
// extensions) against fixtures/conformance-client, and the same suite
// against the Go SDK's own conformance client, built from the module
// cache: nerve must pass every scenario the reference passes, and the
// suite fails on any failure not in expected-failures-next.yml (and on a
// listed one that passes). About 15 s.
func TestConformanceClientNewest(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite takes a few seconds")
	}
	suite := npmfix.ConformanceNext(t)
	client := testutil.BuildBinary(t, "./fixtures/conformance-client")
	reference := gosdkfix.EverythingClient(t)
	baseline := filepath.Join(testutil.RepoRoot(t), "fixtures", "conformance-client", "expected-failures-next.yml")
	run := func(cmd string, args ...string) (map[string]bool, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		outDir := t.TempDir()
		argv := append(suite[1:len(suite):len(suite)], "client", "--command", cmd, "--suite", "all", "-o", outDir)
		c := exec.CommandContext(ctx, suite[0], append(argv, args...)...)
		c.Dir = t.TempDir()
		out, err := c.CombinedOutput()
		summary := string(out)
		if i := strings.Index(summary, "=== SUITE SUMMARY ==="); i >= 0 {
			summary = summary[i:]
		}
		passed := map[string]bool{}
		for _, line := range strings.Split(summary, "\n") {
			if name, ok := strings.CutPrefix(line, "✓ "); ok {
				name, _, _ = strings.Cut(name, ":")
				passed[name] = true
			}
		}
		if err != nil && onlyLateReconnect(t, outDir) {
			passed["sse-retry"], err = true, nil
		}
		return passed, summary, err
	}
	got, summary, err := run(client, "--expected-failures", baseline)
	t.Logf("nerve: %d scenarios passed\n%s", len(got), summary)
	if err != nil {
		t.Errorf("the suite failed for nerve: %v", err)
	}
	ref, refSummary, _ := run(reference)
	t.Logf("the Go SDK's client: %d scenarios passed\n%s", len(ref), refSummary)
	for name := range ref {
		if !got[name] {
			t.Errorf("scenario %s: the Go SDK's client passes it, nerve does not", name)
		}
	}
	if len(got) <= len(ref) {
		t.Errorf("nerve passed %d scenarios, the Go SDK's client %d: nerve is to be ahead", len(got), len(ref))
	}
}

// onlyLateReconnect reports whether the one check short of SUCCESS in the
// suite's results is sse-retry's timing, as a WARNING: the client waited
// the server's retry of 500 ms and reconnected within 1 s, but more than
// 200 ms late, which a loaded machine's scheduler alone causes (measured
// 730 ms beside five -race builds; 503 ms on a quiet machine). Reconnecting
// early, or after more than twice the retry, is a FAILURE and still fails
// the test, as does any other check.
func onlyLateReconnect(t *testing.T, dir string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	late := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range checks {
			switch {
			case c.Status == "SUCCESS" || c.Status == "INFO":
			case c.ID == "client-sse-retry-timing" && c.Status == "WARNING":
				t.Logf("%s: %s (a WARNING in the suite's own terms; the test allows it)", c.ID, c.ErrorMessage)
				late = true
			default:
				return false
			}
		}
	}
	return late
}
