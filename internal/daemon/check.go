package daemon

import (
	"fmt"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// checkNode answers POST …/nodes?dry_run=1: whether spec would be added
// — its id valid and free, its kind's check passed (a graph: every
// mistake at LINE:COLUMN) — with the check's warnings, adding nothing.
// `nerve plan` checks a drafted graph so before the person is asked.
func checkNode(w http.ResponseWriter, r *http.Request, s *session.Session, spec node.Spec) error {
	if err := node.ValidateID(spec.ID); err != nil {
		return badRequest(err)
	}
	if _, err := s.Node(spec.ID); err == nil {
		return fmt.Errorf("node %q: %w (remove it first with `nerve node rm %s`, or pick another name)", spec.ID, session.ErrExists, spec.ID)
	}
	warnings, err := s.Check(r.Context(), spec)
	if err != nil {
		return specError(err)
	}
	writeJSON(w, http.StatusOK, api.NodeResponse{Warnings: warnings})
	return nil
}
