//go:build unix

package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil/promtest"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryMetrics scrapes the real daemon's /metrics as Prometheus
// would, with the MCP endpoint's token, and has Debian's promtool check
// what it serves (issue 31, item 4): calls by node, tool and outcome, node
// states, starts; nothing without the token.
func TestBinaryMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	testutil.RequireE2E(t, "promtool (Debian's prometheus package)", err)
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	n.Must("node", "add", "mcp", "fx", "--", testutil.BuildBinary(t, "./fixtures/mcpserver"))
	n.Must("call", "@echo", "identity", "text=secret-words")
	n.Must("call", "@fx", "echo", "text=hi")
	if _, _, code := n.Run("call", "@fx", "fail"); code != ExitToolError {
		t.Fatalf("@fx fail: exit %d, want %d", code, ExitToolError)
	}
	var ep struct{ URL, Token string }
	if err := json.Unmarshal([]byte(n.Must("mcp", "url", "--json")), &ep); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(ep.URL)
	if err != nil {
		t.Fatal(err)
	}
	metricsURL := "http://" + u.Host + "/metrics"

	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, metricsURL, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	if code, _ := get("not-the-token"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong token: %d, want 401", code)
	}
	code, body := get(ep.Token)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	fams := promtest.Parse(t, body)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"nerve_tool_calls_total", map[string]string{"session": "default", "node": "echo", "tool": "identity", "outcome": "ok"}, 1},
		{"nerve_tool_calls_total", map[string]string{"session": "default", "node": "fx", "tool": "echo", "outcome": "ok"}, 1},
		{"nerve_tool_calls_total", map[string]string{"session": "default", "node": "fx", "tool": "fail", "outcome": "tool_error"}, 1},
		{"nerve_tool_call_duration_seconds", map[string]string{"session": "default", "node": "fx", "tool": "echo"}, 1},
		{"nerve_node_state", map[string]string{"session": "default", "node": "fx", "kind": "mcp", "state": "READY"}, 1},
		{"nerve_node_starts_total", map[string]string{"session": "default", "node": "fx"}, 1},
		{"nerve_catalogue_tools", map[string]string{"session": "default"}, -1},
		{"nerve_sendq_items", nil, 0},
		{"nerve_token_store_files", nil, 0},
		{"go_goroutines", nil, -1},
	} {
		got, ok := promtest.Value(fams, tc.name, tc.labels)
		if !ok || (tc.want >= 0 && got != tc.want) {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if strings.Contains(body, "secret-words") {
		t.Error("/metrics carries a call's argument")
	}
}
