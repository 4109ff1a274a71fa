package daemon

import (
	"context"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// handleStop stops a node and keeps it stopped, across daemon restarts,
// until handleStart (session.Stop).
func (d *Daemon) handleStop(w http.ResponseWriter, r *http.Request) {
	d.nodeOp(w, r, func(ctx context.Context, s *session.Session, id string) error { return s.Stop(ctx, id) })
}

// handleStart starts a node that was stopped (session.Start).
func (d *Daemon) handleStart(w http.ResponseWriter, r *http.Request) {
	d.nodeOp(w, r, func(ctx context.Context, s *session.Session, id string) error {
		return s.Start(session.WithClientEnv(ctx, requestEnv(r)), id)
	})
}

// nodeOp runs op on the request's node and answers with the node's Info;
// a start that failed is 502 start_failed with the node's Info, as for
// restart.
func (d *Daemon) nodeOp(w http.ResponseWriter, r *http.Request, op func(context.Context, *session.Session, string) error) {
	s, err := d.sessionOf(r, false)
	if err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("node")
	if err := op(r.Context(), s, id); err != nil {
		status, e := apiError(err)
		if status == http.StatusInternalServerError {
			status, e.Code = http.StatusBadGateway, api.CodeStartFailed
			if info, ierr := s.Info(id); ierr == nil {
				e.Node = &info
			}
		}
		writeError(w, status, e)
		return
	}
	info, err := s.Info(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NodeResponse{Info: info})
}
