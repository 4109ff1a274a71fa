package daemon

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sampler is a node that can answer an MCP server's sampling request with
// its model (internal/nodes/llm.Node); matched by type assertion so the
// daemon imports no node kind.
type sampler interface {
	Sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
}

// handleSample answers POST /v1/sessions/{s}/nodes/{n}/sample: node n
// answers a sampling request the person at a Commander consented to.
func (d *Daemon) handleSample(w http.ResponseWriter, r *http.Request) {
	var p mcp.CreateMessageParams
	if err := readJSON(r, &p); err != nil {
		writeErr(w, err)
		return
	}
	s, err := d.sessionOf(r, false)
	if err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("node")
	n, err := s.Node(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	sm, ok := n.(sampler)
	if !ok {
		writeErr(w, badRequest(fmt.Errorf("node %q (kind %s) cannot answer sampling requests; name an llm node (`nerve node ls` lists them) with --sampling-node or $NERVE_SAMPLING_NODE", id, n.Kind())))
		return
	}
	res, err := sm.Sample(r.Context(), &p)
	if err != nil {
		writeMCPErr(w, fmt.Errorf("@%s could not answer the sampling request: %w", id, err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}
