package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/session"
)

// runRecorder is a node that keeps records of its runs (a graph).
type runRecorder interface {
	RunRecord(id string) (json.RawMessage, error)
}

// handleRun answers one run's whole record, as the node keeps it: no
// summary, no preview cut at 200 bytes.
func (d *Daemon) handleRun(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	id := r.PathValue("node")
	n, err := s.Node(id)
	if err != nil {
		return err
	}
	rr, ok := n.(runRecorder)
	if !ok {
		return fmt.Errorf("node %q is a %s node: only graphs keep runs: %w", id, n.Kind(), errUnsupported)
	}
	rec, err := rr.RunRecord(r.PathValue("run"))
	if err != nil {
		return badRequest(err) // a run id the caller gave
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(rec, '\n'))
	return nil
}
