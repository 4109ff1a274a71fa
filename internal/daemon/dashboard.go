package daemon

import (
	"context"
	"fmt"
	"net/http"

	"github.com/nerve-dev/nerve/internal/dashboard"
	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// newDashboard makes the dashboard (`nerve ui`) that startMCP serves at
// /ui/ beside the MCP endpoint.
func (d *Daemon) newDashboard() *dashboard.Dashboard {
	return dashboard.New(&dashboard.Options{
		Session: func(ctx context.Context, name string) (*session.Session, error) {
			return d.session(ctx, name, false)
		},
		// As handleRestart: a held node is held no more.
		Restart: func(ctx context.Context, s *session.Session, id string) error {
			defer d.unmarkRestoring(s.Name(), id)
			return s.Restart(ctx, id)
		},
		Hooks:   d.opts.UI,
		Version: d.opts.Version,
		Logger:  d.log.Named("ui"),
	})
}

// mounts are the endpoint's mounts, when the daemon has them: the
// dashboard, and the metrics (metrics.go), whose scraper sends the
// endpoint's token.
func (d *Daemon) mounts(token string) []mcpserver.Mount {
	var ms []mcpserver.Mount
	if d.ui != nil {
		ms = append(ms, mcpserver.Mount{Prefix: dashboard.Prefix, Handler: d.ui, Authorized: d.ui.Authorized, Refused: dashboard.Refused})
	}
	if d.metrics != nil {
		ms = append(ms, d.metricsMount(token))
	}
	return ms
}

// handleUI answers the address that opens the session's dashboard, with a
// fresh one-time token: only the daemon's user, on its socket, gets one.
func (d *Daemon) handleUI(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	ep, ok := d.mcpEndpoint()
	if !ok || d.ui == nil {
		return fmt.Errorf("this nerve serves no dashboard (an embedded session has none, or its HTTP listener did not start: see `nerve daemon status`): %w", errUnsupported)
	}
	u, exp := d.ui.Link(ep.Base(), s.Name())
	writeJSON(w, http.StatusOK, api.UILink{URL: u, Expires: exp})
	return nil
}
