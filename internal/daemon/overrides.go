package daemon

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// handleOverride sets a tool's override (issue 32, item 3): PUT replaces
// it with the body, PATCH adds the body's fields to it, DELETE clears it.
// The session checks it against the tool's schema (400 when it does not
// fit) and answers with the tool as now listed.
func (d *Daemon) handleOverride(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	var ov api.ToolOverride
	if r.Method != http.MethodDelete {
		if err := readJSON(r, &ov); err != nil {
			return err
		}
	}
	t, err := s.SetOverride(r.Context(), r.PathValue("node"), r.PathValue("tool"), ov, r.Method == http.MethodPatch)
	if errors.Is(err, session.ErrBadOverride) {
		return badRequest(err)
	}
	if err != nil {
		return err
	}
	var out api.OverrideResponse
	if t != nil {
		if out.Tool, err = json.Marshal(t); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
