package daemon

import (
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/internal/telemetry/metrics"
	"github.com/nerve-dev/nerve/internal/tokenstore"
	"github.com/nerve-dev/nerve/pkg/session"
)

// newMetrics makes the daemon's Prometheus metrics (docs/observability.md),
// served at /metrics beside the MCP endpoint (metricsMount).
func (d *Daemon) newMetrics() *metrics.Metrics {
	src := metrics.Source{Sessions: d.allSessions}
	if state := d.opts.Paths.State; state != "" {
		src.TokenFiles = func() (int, error) { return tokenstore.Files(state) }
	}
	return metrics.New(src)
}

// allSessions returns the sessions the daemon holds now.
func (d *Daemon) allSessions() []*session.Session {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*session.Session, 0, len(d.sessions))
	for _, h := range d.sessions {
		out = append(out, h.s)
	}
	return out
}

// metricsMount serves the metrics at /metrics to a scraper that sends the
// endpoint's own token as a bearer token.
func (d *Daemon) metricsMount(token string) mcpserver.Mount {
	return mcpserver.Mount{
		Path:       "/metrics",
		Handler:    d.metrics,
		Authorized: mcpserver.BearerAuthorized(token),
		Refused:    "send the header `Authorization: Bearer TOKEN` with the MCP endpoint's token (`nerve mcp url` prints it)",
	}
}
