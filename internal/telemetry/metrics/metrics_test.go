package metrics_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/promtest"

	dto "github.com/prometheus/client_model/go"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/telemetry/metrics"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// scrape reads h's metrics with Prometheus's own text parser.
func scrape(t *testing.T, h http.Handler) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	return promtest.Parse(t, body), body
}

// TestCallsStatesAndStarts: calls are counted by node, tool and outcome
// with their latency; a call to a tool or node that does not exist is
// counted under _unknown, never under the name the caller made up, and no
// argument appears anywhere; node states, starts and tool counts are there.
func TestCallsStatesAndStarts(t *testing.T) {
	var m *metrics.Metrics
	reg := &session.Registry{}
	reg.Register(identity.Kind, identity.New)
	s := session.New("work", reg, &session.Options{
		OnCall:  func(_ context.Context, c *session.CallInfo) { m.Called("work", c) },
		OnState: func(id string, _, to node.State) { m.StateChanged("work", id, to) },
	})
	defer s.Close(context.Background())
	m = metrics.New(metrics.Source{Sessions: func() []*session.Session { return []*session.Session{s} }, TokenFiles: func() (int, error) { return 2, nil }})
	ctx := context.Background()
	if _, err := s.Add(ctx, node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct{ id, tool, args string }{
		{"echo", "identity", `{"text":"secret-a"}`},
		{"echo", "identity", `{"text":"secret-b"}`},
		{"echo", "identity", `{"txet":"secret-c"}`},   // bad arguments: a failed call of a known tool
		{"echo", "made-up-1", `{"text":"secret-d"}`},  // no such tool
		{"nosuch", "identity", `{"text":"secret-e"}`}, // no such node
	} {
		_, _ = s.Call(ctx, call.id, &node.CallRequest{Tool: call.tool, Arguments: json.RawMessage(call.args)})
	}
	fams, body := scrape(t, m)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"nerve_tool_calls_total", map[string]string{"session": "work", "node": "echo", "tool": "identity", "outcome": "ok"}, 2},
		{"nerve_tool_calls_total", map[string]string{"session": "work", "node": "echo", "tool": "identity", "outcome": "error"}, 1},
		{"nerve_tool_calls_total", map[string]string{"session": "work", "node": "echo", "tool": "_unknown", "outcome": "error"}, 1},
		{"nerve_tool_calls_total", map[string]string{"session": "work", "node": "_unknown", "tool": "_unknown", "outcome": "error"}, 1},
		{"nerve_tool_call_duration_seconds", map[string]string{"session": "work", "node": "echo", "tool": "identity"}, 3},
		{"nerve_node_state", map[string]string{"session": "work", "node": "echo", "kind": "identity", "state": "READY"}, 1},
		{"nerve_node_state", map[string]string{"session": "work", "node": "echo", "kind": "identity", "state": "ERROR"}, 0},
		{"nerve_node_starts_total", map[string]string{"session": "work", "node": "echo"}, 1},
		{"nerve_node_tools", map[string]string{"session": "work", "node": "echo"}, 1},
		{"nerve_catalogue_tools", map[string]string{"session": "work"}, 1},
		{"nerve_session_starts_pending", map[string]string{"session": "work"}, 0},
		{"nerve_token_store_files", nil, 2},
	} {
		if got, ok := promtest.Value(fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := fams["nerve_sendq_items"]; !ok {
		t.Error("no nerve_sendq_items")
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	for _, leak := range []string{"secret", "made-up", "nosuch"} {
		if strings.Contains(body, leak) {
			t.Errorf("the metrics carry %q, which a caller sent", leak)
		}
	}

	// A removed node's series go with it.
	if err := s.Remove(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, node.Spec{ID: "other", Kind: identity.Kind}); err != nil {
		t.Fatal(err)
	}
	fams, _ = scrape(t, m)
	if _, ok := promtest.Value(fams, "nerve_node_starts_total", map[string]string{"node": "other"}); !ok {
		t.Error("the start of node other is not counted")
	}
	if _, ok := promtest.Value(fams, "nerve_tool_calls_total", map[string]string{"node": "echo"}); ok {
		t.Errorf("the removed node's calls are still reported: %v", fams["nerve_tool_calls_total"])
	}
}

// BenchmarkCalled is what the metrics add to each call the daemon makes:
// a series' counter and histogram found (made once) and updated.
func BenchmarkCalled(b *testing.B) {
	m := metrics.New(metrics.Source{Sessions: func() []*session.Session { return nil }})
	c := &session.CallInfo{Node: "echo", Tool: "identity", Duration: 3 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		m.Called("default", c)
	}
}
