// Package metrics is the daemon's Prometheus endpoint (issue 31, item 4):
// tool calls, their failures and latency per node and tool, node states
// and starts, the depth of the queues between nodes and slow clients
// (internal/sendq), the catalogue's and the token store's sizes, and a few
// figures of the Go runtime. It labels series by session, node and tool
// only: never by a call's arguments, and a tool or node a caller named
// that does not exist is counted as "_unknown", so what a client sends
// cannot grow the series (docs/observability.md lists them).
//
// It writes Prometheus's text exposition format itself (text.go), checked
// by Prometheus's own parser and promtool in the tests: the official
// client library registers Go and process collectors when its package
// initialises, which would cost every nerve start, `nerve call` included,
// most of a millisecond (docs/performance.md, *Tracing and metrics*).
//
// The daemon makes one (New), tells it of each call (Called) and each
// node's state (StateChanged), and serves it (an http.Handler) at /metrics
// on its MCP endpoint's listener.
package metrics

import (
	"errors"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nerve-dev/nerve/internal/sendq"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// Unknown is the node or tool label of a call to a node or tool that does
// not exist.
const Unknown = "_unknown"

// Source is what the metrics read from the daemon when scraped.
type Source struct {
	// Sessions returns the daemon's sessions.
	Sessions func() []*session.Session
	// TokenFiles returns how many sign-ins the token store keeps as files
	// (internal/tokenstore); nil leaves the series out.
	TokenFiles func() (int, error)
}

// buckets are the latency histogram's upper bounds, in seconds: from an
// identity node's microseconds to a model's minutes.
var buckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// Metrics is one daemon's metrics. Safe for concurrent use.
type Metrics struct {
	src     Source
	started time.Time
	calls   vec[[4]string, atomic.Uint64] // session, node, tool, outcome
	latency vec[[3]string, histogram]     // session, node, tool
	starts  vec[[2]string, atomic.Uint64] // session, node

	// mu guards known: the tools each node answered a call of, the only
	// tool labels a failed call may carry.
	mu    sync.Mutex
	known map[[3]string]bool
}

// New makes the metrics of a daemon whose sessions and token store src
// reads.
func New(src Source) *Metrics {
	return &Metrics{src: src, started: time.Now(), known: map[[3]string]bool{}}
}

// Called counts a call of session sess that ended (session.Options.OnCall).
func (m *Metrics) Called(sess string, c *session.CallInfo) {
	outcome := telemetry.Outcome(c.Result != nil && c.Result.IsError, c.Err)
	nodeID, tool := c.Node, c.Tool
	key := [3]string{sess, nodeID, tool}
	m.mu.Lock()
	switch {
	case c.Err == nil:
		m.known[key] = true
	case errors.Is(c.Err, api.ErrNotFound):
		nodeID, tool = Unknown, Unknown
	case !m.known[key]:
		tool = Unknown // a name the node never answered to
	}
	m.mu.Unlock()
	m.calls.get([4]string{sess, nodeID, tool, outcome}).Add(1)
	m.latency.get([3]string{sess, nodeID, tool}).observe(c.Duration.Seconds())
}

// StateChanged counts a start of node id of session sess
// (session.Options.OnState).
func (m *Metrics) StateChanged(sess, id string, to node.State) {
	if to == node.Starting {
		m.starts.get([2]string{sess, id}).Add(1)
	}
}

// prune forgets the series of nodes and sessions that are gone, so a
// removed node's series go with it (live holds those there now).
func (m *Metrics) prune(live map[[2]string]bool) {
	m.calls.drop(func(k [4]string) bool { return !live[[2]string{k[0], k[1]}] && k[1] != Unknown })
	m.latency.drop(func(k [3]string) bool { return !live[[2]string{k[0], k[1]}] && k[1] != Unknown })
	m.starts.drop(func(k [2]string) bool { return !live[k] })
	m.mu.Lock()
	for k := range m.known {
		if !live[[2]string{k[0], k[1]}] {
			delete(m.known, k)
		}
	}
	m.mu.Unlock()
}

// ServeHTTP writes the metrics in the text exposition format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	var t text
	m.write(&t)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(t.b.Bytes())
}

func (m *Metrics) write(t *text) {
	ss := m.src.Sessions()
	slices.SortFunc(ss, func(a, b *session.Session) int { return compare(a.Name(), b.Name()) })
	infos := make([][]node.Info, len(ss))
	live := map[[2]string]bool{}
	for i, s := range ss {
		infos[i] = s.Infos()
		for _, info := range infos[i] {
			live[[2]string{s.Name(), info.ID}] = true
		}
	}
	m.prune(live)
	t.family("nerve_tool_calls_total", "counter", "Tool calls that ended, by session, node, tool and outcome (ok; tool_error: the tool ran and reported an error; error: the call failed).")
	m.calls.each(func(k [4]string, v *atomic.Uint64) {
		t.sample("nerve_tool_calls_total", []string{"session", "node", "tool", "outcome"}, k[:], float64(v.Load()))
	})
	t.family("nerve_tool_call_duration_seconds", "histogram", "How long tool calls took, from the session's receiving them to their end, by session, node and tool.")
	m.latency.each(func(k [3]string, h *histogram) {
		h.write(t, "nerve_tool_call_duration_seconds", []string{"session", "node", "tool"}, k[:])
	})
	t.family("nerve_node_starts_total", "counter", "Times a node went STARTING (its first start, restarts, a lazy node's start for a call), by session and node.")
	m.starts.each(func(k [2]string, v *atomic.Uint64) {
		t.sample("nerve_node_starts_total", []string{"session", "node"}, k[:], float64(v.Load()))
	})
	m.writeState(t, ss, infos)
}

// writeState writes what is so at the moment of a scrape (ss and their
// nodes' infos): node states, calls in flight, tool counts, queue depths,
// the token store, the runtime. It reads only what the sessions hold: a
// scrape never waits for a node.
func (m *Metrics) writeState(t *text, ss []*session.Session, infos [][]node.Info) {
	t.family("nerve_node_state", "gauge", "1 for the state each node is in, 0 for the others, by session, node, kind and state.")
	for i, s := range ss {
		for _, info := range infos[i] {
			for st := range api.NumStates {
				v := 0.0
				if info.State == api.State(st) {
					v = 1
				}
				t.sample("nerve_node_state", []string{"session", "node", "kind", "state"}, []string{s.Name(), info.ID, info.Kind, api.State(st).String()}, v)
			}
		}
	}
	t.family("nerve_node_calls_in_flight", "gauge", "Calls running in each node now.")
	for i, s := range ss {
		for _, info := range infos[i] {
			t.sample("nerve_node_calls_in_flight", []string{"session", "node"}, []string{s.Name(), info.ID}, float64(info.InFlight))
		}
	}
	t.family("nerve_node_tools", "gauge", "Tools each node has, as the session last listed them (a stopped lazy node keeps its catalogue's).")
	for i, s := range ss {
		for _, info := range infos[i] {
			t.sample("nerve_node_tools", []string{"session", "node"}, []string{s.Name(), info.ID}, float64(info.Tools))
		}
	}
	t.family("nerve_catalogue_tools", "gauge", "Tools each session's catalogue holds: the sum of its nodes' nerve_node_tools.")
	for i, s := range ss {
		n := 0
		for _, info := range infos[i] {
			n += info.Tools
		}
		t.sample("nerve_catalogue_tools", []string{"session"}, []string{s.Name()}, float64(n))
	}
	t.family("nerve_session_starts_pending", "gauge", "Nodes of each session whose start is under way (STARTING): the session's queue of starts.")
	for i, s := range ss {
		n := 0
		for _, info := range infos[i] {
			if info.State == node.Starting {
				n++
			}
		}
		t.sample("nerve_session_starts_pending", []string{"session"}, []string{s.Name()}, float64(n))
	}
	queued, dropped := sendq.Stats()
	t.family("nerve_sendq_items", "gauge", "Events queued for clients that have not read them yet (every call's and MCP client's queue together, internal/sendq).")
	t.sample("nerve_sendq_items", nil, nil, float64(queued))
	t.family("nerve_sendq_dropped_total", "counter", "Events dropped because a client did not read them in time.")
	t.sample("nerve_sendq_dropped_total", nil, nil, float64(dropped))
	if m.src.TokenFiles != nil {
		if n, err := m.src.TokenFiles(); err == nil {
			t.family("nerve_token_store_files", "gauge", "OAuth sign-ins of mcp nodes kept in the token store's files (sign-ins in the OS keychain are not counted: a keychain is not listed without asking it).")
			t.sample("nerve_token_store_files", nil, nil, float64(n))
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, g := range []struct {
		name, typ, help string
		v               float64
	}{
		{"go_goroutines", "gauge", "Goroutines that currently exist.", float64(runtime.NumGoroutine())},
		{"go_memstats_alloc_bytes", "gauge", "Bytes of allocated heap objects.", float64(ms.HeapAlloc)},
		{"go_memstats_sys_bytes", "gauge", "Bytes of memory obtained from the OS.", float64(ms.Sys)},
		{"go_gc_cycles_total", "counter", "Completed GC cycles.", float64(ms.NumGC)},
		{"process_start_time_seconds", "gauge", "Start time of the daemon since the Unix epoch, in seconds.", float64(m.started.UnixNano()) / 1e9},
	} {
		t.family(g.name, g.typ, g.help)
		t.sample(g.name, nil, nil, g.v)
	}
}

// vec is a family's series by label values, made on first use.
type vec[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]*V
}

func (v *vec[K, V]) get(k K) *V {
	v.mu.RLock()
	p := v.m[k]
	v.mu.RUnlock()
	if p != nil {
		return p
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if p = v.m[k]; p == nil {
		if v.m == nil {
			v.m = map[K]*V{}
		}
		p = new(V)
		v.m[k] = p
	}
	return p
}

// drop removes the series whose labels match.
func (v *vec[K, V]) drop(match func(K) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.m {
		if match(k) {
			delete(v.m, k)
		}
	}
}

// each calls f for each series, in the order of their label values.
func (v *vec[K, V]) each(f func(K, *V)) {
	v.mu.RLock()
	keys := make([]K, 0, len(v.m))
	for k := range v.m {
		keys = append(keys, k)
	}
	ps := make([]*V, len(keys))
	slices.SortFunc(keys, func(a, b K) int { return compare(label(a), label(b)) })
	for i, k := range keys {
		ps[i] = v.m[k]
	}
	v.mu.RUnlock()
	for i, k := range keys {
		f(k, ps[i])
	}
}

// label is a key's label values joined, for sorting.
func label[K any](k K) string {
	switch k := any(k).(type) {
	case [2]string:
		return k[0] + "\x00" + k[1]
	case [3]string:
		return k[0] + "\x00" + k[1] + "\x00" + k[2]
	case [4]string:
		return k[0] + "\x00" + k[1] + "\x00" + k[2] + "\x00" + k[3]
	}
	return ""
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// histogram counts observations into buckets.
type histogram struct {
	mu     sync.Mutex
	counts [len(buckets)]uint64 // one per bucket, not cumulative
	sum    float64
	n      uint64
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(buckets[:], v) // the first bound ≥ v
	h.mu.Lock()
	if i < len(buckets) {
		h.counts[i]++
	}
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *histogram) write(t *text, name string, names, values []string) {
	h.mu.Lock()
	counts, sum, n := h.counts, h.sum, h.n
	h.mu.Unlock()
	le := append(slices.Clip(names), "le")
	var cum uint64
	for i, b := range buckets {
		cum += counts[i]
		t.sample(name+"_bucket", le, append(slices.Clip(values), formatFloat(b)), float64(cum))
	}
	t.sample(name+"_bucket", le, append(slices.Clip(values), "+Inf"), float64(n))
	t.sample(name+"_sum", names, values, sum)
	t.sample(name+"_count", names, values, float64(n))
}
