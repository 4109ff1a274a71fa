package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/gosdkfix"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// serverSuite runs the server side of a conformance suite (--suite all)
// against url, and returns the scenarios that passed and the summary.
func serverSuite(t *testing.T, suite []string, url string, args ...string) (map[string]bool, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	argv := append(slices.Clone(suite[1:]), "server", "--url", url, "--suite", "all")
	dir := t.TempDir()
	argv = append(argv, "--output-dir", filepath.Join(dir, "results"))
	cmd := exec.CommandContext(ctx, suite[0], append(argv, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	if !totalRE.MatchString(summary) {
		t.Fatalf("no summary from the conformance suite against %s (%v):\n%s", url, err, out)
	}
	passed := map[string]bool{}
	for _, line := range strings.Split(summary, "\n") {
		if name, ok := strings.CutPrefix(line, "✓ "); ok {
			name, _, _ = strings.Cut(name, ":")
			passed[name] = true
		}
	}
	if err != nil {
		summary += whyFailed(filepath.Join(dir, "results"))
	}
	return passed, summary, err
}

// whyFailed says why each failed check of a suite's run failed, from
// the checks.json files its --output-dir holds, so that a red scenario in
// CI's log names its cause.
func whyFailed(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if json.Unmarshal(data, &checks) != nil {
			return nil
		}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				fmt.Fprintf(&b, "\n%s: %s: %s", filepath.Base(filepath.Dir(path)), c.ID, c.ErrorMessage)
			}
		}
		return nil
	})
	if b.Len() == 0 {
		return ""
	}
	return "\nfailed checks:" + b.String()
}

// httpEverything starts the Go SDK's everything-server on streamable HTTP
// (stateless, its default, or with sessions) until the end of the test,
// and returns its URL.
func httpEverything(t *testing.T, bin string, stateless bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-http", addr, fmt.Sprintf("-stateless=%v", stateless))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything-server does not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // the server's start
	}
}

// TestConformanceServerNewest is the server side's gate on the newest
// conformance suite (fixtures/conformance-next, protocol 2026-07-28):
// `server --suite all` against `/mcp/SESSION/node/x`, where x is the Go
// SDK's everything-server behind a stdio mcp node — every scenario not in
// testdata/conformance-next-expected-failures.yml must pass — and behind an
// HTTP node; and against that server directly, the reference, measured the
// same run in both of its HTTP modes. nerve must pass more scenarios than
// the reference with sessions (TESTING.md's reference, which a client of
// 2026-07-28 cannot use), and a scenario a reference passes and nerve
// does not must be in the baseline, explained in docs/conformance.md.
func TestConformanceServerNewest(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite: slow")
	}
	suite := npmfix.ConformanceNext(t)
	bin := gosdkfix.EverythingServer(t)
	baseline := filepath.Join(testutil.RepoRoot(t), "internal", "mcpserver", "testdata", "conformance-next-expected-failures.yml")

	through := func(spec node.Spec, args ...string) (map[string]bool, string, error) {
		s := newSession(t)
		addNode(t, s, spec)
		ep := startEndpoint(t, s)
		// The suite sends no header of its own: a proxy adds the token.
		return serverSuite(t, suite, tokenProxy(t, "http://"+ep.Addr(), ep.Token())+"/mcp/test/node/x", args...)
	}
	stdio, stdioSum, err := through(node.Spec{ID: "x", Kind: "mcp", Command: []string{bin}}, "--expected-failures", baseline)
	t.Logf("nerve through a stdio node: %d scenarios passed\n%s", len(stdio), stdioSum)
	if err != nil {
		t.Errorf("the suite failed through a stdio node (or its baseline is stale): %v", err)
	}
	opts, _ := json.Marshal(map[string]string{"transport": "http", "url": httpEverything(t, bin, false)})
	web, webSum, _ := through(node.Spec{ID: "x", Kind: "mcp", Options: opts})
	t.Logf("nerve through an HTTP node (the server with sessions): %d scenarios passed\n%s", len(web), webSum)

	ref, refSum, _ := serverSuite(t, suite, httpEverything(t, bin, false))
	t.Logf("the Go SDK's everything-server with sessions (TESTING.md's reference): %d scenarios passed\n%s", len(ref), refSum)
	stateless, statelessSum, _ := serverSuite(t, suite, httpEverything(t, bin, true))
	t.Logf("the Go SDK's everything-server stateless (its default): %d scenarios passed\n%s", len(stateless), statelessSum)

	expected, err := os.ReadFile(baseline)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []map[string]bool{ref, stateless} {
		for name := range r {
			if !stdio[name] && !strings.Contains(string(expected), "  - "+name+"\n") {
				t.Errorf("scenario %s: the reference passes it, nerve through a stdio node does not, and the baseline does not say why", name)
			}
		}
	}
	for _, got := range []map[string]bool{stdio, web} {
		if len(got) <= len(ref) {
			t.Errorf("nerve passed %d scenarios, the reference %d: nerve is to be ahead", len(got), len(ref))
		}
	}
}
