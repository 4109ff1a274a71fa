// Package metrics is the daemon's Prometheus endpoint (issue 31, item 4):
// tool calls, their failures and latency per node and tool, node states
// and starts, the depth of the queues between nodes and slow clients
// (internal/sendq), the catalogue's and the token store's sizes, and the
// Go runtime's and the process's own figures. It keeps its own registry,
// never Prometheus's global one, and labels series by session, node and
// tool only: never by a call's arguments, and a tool or node a caller
// named that does not exist is counted as "_unknown", so what a client
// sends cannot grow the series (docs/observability.md lists them).
//
// The daemon makes one (New), tells it of each call (Called) and session
// (Watch), and serves Handler at /metrics on its MCP endpoint's listener.
package metrics

import (
	"errors"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

// Metrics is one daemon's metrics. Safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	starts  *prometheus.CounterVec

	// mu guards known: the tools each node answered a call of, the only
	// tool labels a failed call may carry.
	mu    sync.Mutex
	known map[[3]string]bool
}

// New makes the metrics of a daemon whose sessions and token store src
// reads.
func New(src Source) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nerve_tool_calls_total",
			Help: "Tool calls that ended, by session, node, tool and outcome (ok, tool_error: the tool ran and reported an error, error: the call failed).",
		}, []string{"session", "node", "tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nerve_tool_call_duration_seconds",
			Help:    "How long tool calls took, from the session's receiving them to their end, by session, node and tool.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"session", "node", "tool"}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nerve_node_starts_total",
			Help: "Times a node went STARTING (its first start, restarts, a lazy node's start for a call), by session and node.",
		}, []string{"session", "node"}),
		known: map[[3]string]bool{},
	}
	m.reg.MustRegister(m.calls, m.latency, m.starts, &state{src: src},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Called counts a call of session sess that ended (session.Options.OnCall).
func (m *Metrics) Called(sess string, c *session.CallInfo) {
	isError := c.Result != nil && c.Result.IsError
	outcome := telemetry.Outcome(isError, c.Err)
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
	m.calls.WithLabelValues(sess, nodeID, tool, outcome).Inc()
	m.latency.WithLabelValues(sess, nodeID, tool).Observe(c.Duration.Seconds())
}

// Watch counts the starts of s's nodes and forgets a node's series when it
// is removed, until s closes.
func (m *Metrics) Watch(s *session.Session) {
	sub := s.SubscribeFiltered(64, func(ev *session.Event) bool {
		return ev.Kind == session.EventNodeRemoved || ev.Kind == session.EventState && ev.To == node.Starting.String()
	})
	name := s.Name()
	// The goroutine ends when the session closes (and closes sub.C).
	go func() {
		for ev := range sub.C {
			if ev.Kind == session.EventNodeRemoved {
				m.forget(name, ev.Node)
				continue
			}
			m.starts.WithLabelValues(name, ev.Node).Inc()
		}
	}()
}

func (m *Metrics) forget(sess, id string) {
	labels := prometheus.Labels{"session": sess, "node": id}
	m.calls.DeletePartialMatch(labels)
	m.latency.DeletePartialMatch(labels)
	m.starts.DeletePartialMatch(labels)
	m.mu.Lock()
	for k := range m.known {
		if k[0] == sess && k[1] == id {
			delete(m.known, k)
		}
	}
	m.mu.Unlock()
}

// state reads what is so at the moment of a scrape: node states, calls in
// flight, catalogue sizes, queue depths, the token store. It reads only
// what the session holds: a scrape never waits for a node.
type state struct{ src Source }

var (
	descState = prometheus.NewDesc("nerve_node_state",
		"1 for the state each node is in, 0 for the others, by session, node, kind and state.",
		[]string{"session", "node", "kind", "state"}, nil)
	descInFlight = prometheus.NewDesc("nerve_node_calls_in_flight",
		"Calls running in each node now.", []string{"session", "node"}, nil)
	descStarting = prometheus.NewDesc("nerve_session_starts_pending",
		"Nodes of each session whose start is under way (STARTING): the session's queue of starts.", []string{"session"}, nil)
	descTools = prometheus.NewDesc("nerve_catalogue_tools",
		"Tools each session's catalogue holds: the sum of its nodes' tool counts (nerve_node_tools).", []string{"session"}, nil)
	descNodeTools = prometheus.NewDesc("nerve_node_tools",
		"Tools each node has, as the session last listed them (a stopped lazy node keeps its catalogue's).", []string{"session", "node"}, nil)
	descQueued = prometheus.NewDesc("nerve_sendq_items",
		"Events queued for clients that have not read them yet (every call's and MCP client's queue together, internal/sendq).", nil, nil)
	descDropped = prometheus.NewDesc("nerve_sendq_dropped_total",
		"Events dropped because a client did not read them in time.", nil, nil)
	descTokens = prometheus.NewDesc("nerve_token_store_files",
		"OAuth sign-ins of mcp nodes kept in the token store's files (sign-ins in the OS keychain are not counted: a keychain is not listed without asking it).", nil, nil)
)

func (st *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descInFlight, descStarting, descTools, descNodeTools, descQueued, descDropped, descTokens} {
		ch <- d
	}
}

func (st *state) Collect(ch chan<- prometheus.Metric) {
	for _, s := range st.src.Sessions() {
		name := s.Name()
		starting, tools := 0, 0
		for _, info := range s.Infos() {
			for i := range api.NumStates {
				v := 0.0
				if info.State == api.State(i) {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, name, info.ID, info.Kind, api.State(i).String())
			}
			if info.State == node.Starting {
				starting++
			}
			ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(info.InFlight), name, info.ID)
			ch <- prometheus.MustNewConstMetric(descNodeTools, prometheus.GaugeValue, float64(info.Tools), name, info.ID)
			tools += info.Tools
		}
		ch <- prometheus.MustNewConstMetric(descStarting, prometheus.GaugeValue, float64(starting), name)
		ch <- prometheus.MustNewConstMetric(descTools, prometheus.GaugeValue, float64(tools), name)
	}
	queued, dropped := sendq.Stats()
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(queued))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(dropped))
	if st.src.TokenFiles != nil {
		if n, err := st.src.TokenFiles(); err == nil {
			ch <- prometheus.MustNewConstMetric(descTokens, prometheus.GaugeValue, float64(n))
		}
	}
}
