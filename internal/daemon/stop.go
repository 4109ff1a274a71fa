package daemon

import (
	"context"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// handleStop stops a node and keeps it stopped, across daemon restarts,
// until handleStart (session.Stop).
func (d *Daemon) handleStop(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	return nodeOp(w, r, s, func(ctx context.Context, s *session.Session, id string) error { return s.Stop(ctx, id) })
}

// handleStart starts a node that was stopped (session.Start).
func (d *Daemon) handleStart(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	return nodeOp(w, r, s, func(ctx context.Context, s *session.Session, id string) error {
		return s.Start(session.WithClientEnv(ctx, requestEnv(r)), id)
	})
}

// nodeOp runs op on the request's node and answers with the node's Info;
// a start that failed is 502 start_failed with the node's Info, as for
// restart.
func nodeOp(w http.ResponseWriter, r *http.Request, s *session.Session, op func(context.Context, *session.Session, string) error) error {
	id := r.PathValue("node")
	if err := op(r.Context(), s, id); err != nil {
		return nodeFailed(err, api.CodeStartFailed, s, id)
	}
	return writeInfo(w, s, id)
}
