package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/api/mcpapi"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// errUnsupported marks a request the node's kind cannot answer (400).
var errUnsupported = errors.New("not supported by this kind of node")

type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return errUnsupported }

// resourceNode is what an mcp node offers beyond tools. The daemon reaches
// it by a type assertion so that it never imports a node kind.
type resourceNode interface {
	Resources() []*mcp.Resource
	ResourceTemplates() []*mcp.ResourceTemplate
	Prompts() []*mcp.Prompt
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// resetter is a node that keeps a conversation it can forget (llm).
type resetter interface {
	Reset(ctx context.Context) error
}

// nodeOf returns the request's session and node by the session's waiting
// rule: with start, once the node can serve (a lazy node is started);
// without, once it is settled (a lazy node answers from its catalogue).
func (d *Daemon) nodeOf(r *http.Request, start bool) (*session.Session, node.Node, error) {
	s, err := d.sessionOf(r, false)
	if err != nil {
		return nil, nil, err
	}
	id := r.PathValue("node")
	wait := s.Settled
	if start {
		wait = s.Ready
	}
	n, err := wait(r.Context(), id)
	if err != nil {
		return nil, nil, err
	}
	return s, n, nil
}

// resourceNodeOf returns the request's node as an mcp node; what names the
// feature asked for ("resources", "prompts") in the error for another kind.
// start: the request needs the server (a read, a prompt), not a listing.
func (d *Daemon) resourceNodeOf(r *http.Request, what string, start bool) (resourceNode, error) {
	_, n, err := d.nodeOf(r, start)
	if err != nil {
		return nil, err
	}
	rn, ok := n.(resourceNode)
	if !ok {
		return nil, &unsupportedError{fmt.Sprintf("@%s has no %s: only mcp nodes do (it is a %s node; see `nerve node ls`)", n.ID(), what, n.Kind())}
	}
	return rn, nil
}

// writeNodeErr writes an error of a request the node itself failed to
// answer: what is not the caller's fault is the node's (502), not ours.
func writeNodeErr(w http.ResponseWriter, err error) {
	writeErr(w, nodeFailed(err, api.CodeCallFailed, nil, ""))
}

func (d *Daemon) handleResources(w http.ResponseWriter, r *http.Request) {
	rn, err := d.resourceNodeOf(r, "resources", false)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := mcpapi.Resources{Resources: rn.Resources(), Templates: rn.ResourceTemplates()}
	if out.Resources == nil {
		out.Resources = []*mcp.Resource{}
	}
	if out.Templates == nil {
		out.Templates = []*mcp.ResourceTemplate{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Daemon) handleReadResource(w http.ResponseWriter, r *http.Request) {
	var req api.ReadRequest
	if err := readJSON(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if req.URI == "" {
		writeErr(w, badRequest(errors.New("reading a resource needs its uri (list them with `nerve resources NODE`)")))
		return
	}
	rn, err := d.resourceNodeOf(r, "resources", true)
	if err != nil {
		writeErr(w, err)
		return
	}
	res, err := rn.ReadResource(r.Context(), req.URI)
	if err != nil {
		writeNodeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (d *Daemon) handlePrompts(w http.ResponseWriter, r *http.Request) {
	rn, err := d.resourceNodeOf(r, "prompts", false)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := rn.Prompts()
	if out == nil {
		out = []*mcp.Prompt{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Daemon) handleGetPrompt(w http.ResponseWriter, r *http.Request) {
	var req api.PromptRequest
	if err := readJSON(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if req.Name == "" {
		writeErr(w, badRequest(errors.New("getting a prompt needs its name (list them with `nerve prompts NODE`)")))
		return
	}
	rn, err := d.resourceNodeOf(r, "prompts", true)
	if err != nil {
		writeErr(w, err)
		return
	}
	res, err := rn.GetPrompt(r.Context(), req.Name, req.Arguments)
	if err != nil {
		writeNodeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (d *Daemon) handleReset(w http.ResponseWriter, r *http.Request) {
	s, n, err := d.nodeOf(r, true)
	if err != nil {
		writeErr(w, err)
		return
	}
	rn, ok := n.(resetter)
	if !ok {
		writeErr(w, &unsupportedError{fmt.Sprintf("@%s has no conversation to reset: it is a %s node (llm nodes keep one)", n.ID(), n.Kind())})
		return
	}
	if err := rn.Reset(r.Context()); err != nil {
		writeNodeErr(w, err)
		return
	}
	info, err := s.Info(n.ID())
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NodeResponse{Info: info})
}
