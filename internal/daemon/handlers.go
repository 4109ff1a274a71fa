package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// maxBody caps request bodies (specs, call arguments).
const maxBody = 16 << 20

// badRequestError marks an error as the client's fault (400).
type badRequestError struct{ err error }

func (e *badRequestError) Error() string { return e.err.Error() }
func (e *badRequestError) Unwrap() error { return e.err }

func badRequest(err error) error { return &badRequestError{err} }

// apiError maps an error to its status and wire form: the one place that
// decides which error is which status.
func apiError(err error) (int, api.Error) {
	var br *badRequestError
	var snf *errSessionNotFound
	code, status := api.CodeInternal, http.StatusInternalServerError
	switch {
	case errors.As(err, &snf):
		code, status = api.CodeSessionNotFound, http.StatusNotFound
	case errors.Is(err, node.ErrNotFound):
		code, status = api.CodeNodeNotFound, http.StatusNotFound
	case errors.Is(err, node.ErrUnknownTool):
		code, status = api.CodeUnknownTool, http.StatusNotFound
	case errors.Is(err, node.ErrBadArgs):
		code, status = api.CodeBadArgs, http.StatusBadRequest
	case errors.Is(err, session.ErrExists):
		code, status = api.CodeExists, http.StatusConflict
	case errors.Is(err, node.ErrNotReady):
		code, status = api.CodeNotReady, http.StatusConflict
	case errors.Is(err, session.ErrChanged):
		code, status = api.CodeChanged, http.StatusPreconditionFailed
	case errors.Is(err, session.ErrClosed):
		code, status = api.CodeShuttingDown, http.StatusServiceUnavailable
	case errors.As(err, &br):
		code, status = api.CodeBadRequest, http.StatusBadRequest
	case errors.Is(err, errUnsupported), errors.Is(err, session.ErrUnsupported):
		code, status = api.CodeUnsupported, http.StatusBadRequest
	}
	e := api.Error{Code: code, Message: err.Error()}
	var ne *nodeError
	if status == http.StatusInternalServerError && errors.As(err, &ne) {
		status, e.Code, e.Node = http.StatusBadGateway, ne.code, ne.node
	}
	return status, e
}

// nodeError is a failure of a node (its start, its tool list, a call, a
// read): what apiError would answer 500 is the node's or its peer's
// doing, not the daemon's, so it is 502 with code (and the node's Info
// when node is set).
type nodeError struct {
	err  error
	code string
	node *api.Info
}

func (e *nodeError) Error() string { return e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }

// nodeFailed marks err (if not nil) as node id's failure, answered 502
// with code; for api.CodeStartFailed the answer carries the node's Info.
func nodeFailed(err error, code string, s *session.Session, id string) error {
	if err == nil {
		return nil
	}
	ne := &nodeError{err: err, code: code}
	if code == api.CodeStartFailed && s != nil {
		if info, ierr := s.Info(id); ierr == nil {
			ne.node = &info
		}
	}
	return ne
}

// handler is a route's handler that returns its error: ServeHTTP writes
// it, so statuses come from one function (apiError), as tailscale's
// tsweb.ReturnHandlerFunc.
type handler func(w http.ResponseWriter, r *http.Request) error

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		writeErr(w, err)
	}
}

// inSession adapts a handler of a route under /v1/sessions/{session}:
// it finds the session (making it, with create) or answers why not.
func (d *Daemon) inSession(create bool, h func(w http.ResponseWriter, r *http.Request, s *session.Session) error) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, err := d.sessionOf(r, create)
		if err != nil {
			return err
		}
		return h(w, r, s)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e api.Error) {
	writeJSON(w, status, api.ErrorBody{Error: e})
}

func writeErr(w http.ResponseWriter, err error) {
	status, e := apiError(err)
	writeError(w, status, e)
}

// readJSON decodes a request body into v, refusing unknown fields.
func readJSON(r *http.Request, v any) error {
	// Reading to EOF lets the server notice a client that goes away (and
	// cancel r.Context()) while the handler works.
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return badRequest(fmt.Errorf("reading the request: %w", err))
	}
	if len(data) > maxBody {
		return badRequest(fmt.Errorf("request body is over %d bytes", maxBody))
	}
	if err := decodeStrict(data, v); err != nil {
		return badRequest(fmt.Errorf("decoding the request: %w", err))
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (d *Daemon) handleNotFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound,
		Message: fmt.Sprintf("no route %s %s in API v%s: is this nerve older than the client? try `nerve version`", r.Method, r.URL.Path, api.Version)})
}

func (d *Daemon) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.VersionInfo{
		Version:    d.opts.Version,
		APIVersion: api.Version,
		PID:        os.Getpid(),
		Started:    d.started,
		Embedded:   d.opts.Embedded,
		StateDir:   d.stateDir(),
		Socket:     d.opts.Socket,
		Notices:    d.Notices(),
	})
}

func (d *Daemon) stateDir() string {
	if d.opts.Persist {
		return d.opts.Paths.State
	}
	return ""
}

func (d *Daemon) handleKinds(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.opts.Registry.Kinds())
}

func (d *Daemon) handleShutdown(w http.ResponseWriter, r *http.Request) {
	if d.opts.OnShutdown == nil {
		writeError(w, http.StatusBadRequest, api.Error{Code: api.CodeBadRequest,
			Message: "this daemon is embedded in a process and stops with it"})
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
	d.opts.OnShutdown()
}

func (d *Daemon) handleSessions(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	names := d.namesLocked()
	d.mu.Unlock()
	out := make([]api.SessionInfo, 0, len(names))
	for _, name := range names {
		s, err := d.session(r.Context(), name, false)
		if err != nil {
			continue // removed meanwhile
		}
		si := api.SessionInfo{Name: name, States: map[string]int{}}
		for _, info := range s.Infos() {
			si.Nodes++
			si.States[info.State.String()]++
		}
		out = append(out, si)
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Daemon) handleRemoveSession(w http.ResponseWriter, r *http.Request) {
	if err := d.removeSession(r.Context(), r.PathValue("session")); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (d *Daemon) sessionOf(r *http.Request, create bool) (*session.Session, error) {
	return d.session(r.Context(), r.PathValue("session"), create)
}

func (d *Daemon) handleNodes(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	writeJSON(w, http.StatusOK, s.Infos())
	return nil
}

func (d *Daemon) handleAddNode(w http.ResponseWriter, r *http.Request) error {
	var spec node.Spec
	if err := readJSON(r, &spec); err != nil {
		return err
	}
	s, err := d.sessionOf(r, true)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("dry_run") == "1" {
		return checkNode(w, r, s, spec) // check.go
	}
	// The kind's rules (a graph's calls, schemas, cycles) hold for every
	// client, not only the CLI.
	warnings, err := s.Check(r.Context(), spec)
	if err != nil {
		return specError(err)
	}
	if _, err := s.RegisterToStart(spec); err != nil {
		if status, _ := apiError(err); status == http.StatusInternalServerError {
			// A spec the factory refuses (unknown kind, bad options) is
			// the caller's to fix.
			return badRequest(err)
		}
		return err
	}
	s.SetClientEnv(spec.ID, requestEnv(r))
	if err := s.StartRegistered(r.Context(), spec.ID); err != nil {
		// %v, not %w: whatever the start's error, the answer is 502
		// start_failed with the node's Info.
		if node.NamesNodeFix(err.Error()) {
			return nodeFailed(fmt.Errorf("node %q was added but did not start: %v (or `nerve node rm %s`)", spec.ID, err, spec.ID), api.CodeStartFailed, s, spec.ID)
		}
		return nodeFailed(fmt.Errorf("node %q was added but did not start: %v; see `nerve node info %s`, fix it and `nerve node restart %s` (or `nerve node rm %s`)", spec.ID, err, spec.ID, spec.ID, spec.ID), api.CodeStartFailed, s, spec.ID)
	}
	info, err := s.Info(spec.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.NodeResponse{Info: info, Warnings: warnings})
	return nil
}

// specError is the error of a spec that its kind's check or factory
// refused: the caller's to fix (400), unless it says otherwise.
func specError(err error) error {
	if status, _ := apiError(err); status != http.StatusInternalServerError {
		return err
	}
	return badRequest(err)
}

// handleReplaceNode puts a new spec in the place of a node in one step
// (session.ReplaceIf), checked first as an add is: a spec with mistakes
// changes nothing, and the state file holds the old spec or the new one
// at every moment. With If-Match, a node whose spec's tag (the ETag of
// its GET) is not one of the header's changes nothing either: 412.
func (d *Daemon) handleReplaceNode(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	var spec node.Spec
	if err := readJSON(r, &spec); err != nil {
		return err
	}
	id := r.PathValue("node")
	if spec.ID == "" {
		spec.ID = id
	}
	if spec.ID != id {
		return badRequest(fmt.Errorf("the spec is for node %q, the route for node %q: replace a node by its own id", spec.ID, id))
	}
	defer d.unmarkRestoring(r.PathValue("session"), id) // a held node is held no more
	warnings, err := s.Check(r.Context(), spec)
	if err != nil {
		return specError(err)
	}
	n, err := s.ReplaceIf(session.WithClientEnv(r.Context(), requestEnv(r)), spec, ifMatch(r))
	if n == nil {
		return specError(err)
	}
	// The new spec holds the place even if its node did not start.
	if terr := setETag(w, s, id); terr != nil {
		return terr
	}
	if err != nil {
		return nodeFailed(fmt.Errorf("node %q was replaced but did not start: %v; see `nerve node info %s`, fix it and `nerve node restart %s`", id, err, id, id), api.CodeStartFailed, s, id)
	}
	info, err := s.Info(id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.NodeResponse{Info: info, Warnings: warnings})
	return nil
}

// ifMatch returns the entity tags of r's If-Match headers (RFC 9110
// §13.1.1), or nil for none or "*": the node exists, which a replace
// needs anyway. Weak tags stay as they are, and match nothing.
func ifMatch(r *http.Request) []string {
	var tags []string
	for _, h := range r.Header.Values(api.HeaderIfMatch) {
		for _, t := range strings.Split(h, ",") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
	}
	if slices.Contains(tags, "*") {
		return nil
	}
	return tags
}

// setETag sets the ETag header to the tag of node id's spec.
func setETag(w http.ResponseWriter, s *session.Session, id string) error {
	spec, err := s.Spec(id)
	if err != nil {
		return err
	}
	w.Header().Set(api.HeaderETag, session.SpecTag(spec))
	return nil
}

func (d *Daemon) handleNode(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	id := r.PathValue("node")
	info, err := s.Info(id)
	if err != nil {
		return err
	}
	spec, err := s.Spec(id)
	if err != nil {
		return err
	}
	w.Header().Set(api.HeaderETag, session.SpecTag(spec))
	writeJSON(w, http.StatusOK, api.NodeDetail{Info: info, Spec: spec})
	return nil
}

func (d *Daemon) handleRemoveNode(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	name, id := r.PathValue("session"), r.PathValue("node")
	defer d.unmarkRestoring(name, id) // a held node is held no more
	if err := s.Remove(r.Context(), id); err != nil && !(errors.Is(err, node.ErrNotFound) && d.dropOrphan(name, id)) {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// dropOrphan forgets a saved node this daemon could not build.
func (d *Daemon) dropOrphan(sess, id string) bool {
	d.mu.Lock()
	h, ok := d.sessions[sess]
	d.mu.Unlock()
	if !ok {
		return false
	}
	h.orphanMu.Lock()
	found := false
	for i, o := range h.orphans {
		if o.ID == id {
			h.orphans = append(h.orphans[:i:i], h.orphans[i+1:]...)
			found = true
			break
		}
	}
	h.orphanMu.Unlock()
	if found && d.opts.Persist {
		specs := append(h.s.Specs(), h.orphans...)
		if err := saveSpecs(d.statePath(sess), sess, specs, h.s.Settings()); err != nil {
			d.log.Error("saving specs", zap.String("session", sess), zap.Error(err))
		}
	}
	return found
}

func (d *Daemon) handleRestart(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	id := r.PathValue("node")
	// A held node keeps its restore marker until its restart returns: a
	// restart that kills the daemon leaves it held at the next start.
	defer d.unmarkRestoring(r.PathValue("session"), id)
	if err := s.Restart(session.WithClientEnv(r.Context(), requestEnv(r)), id); err != nil {
		return nodeFailed(err, api.CodeStartFailed, s, id)
	}
	return writeInfo(w, s, id)
}

// writeInfo answers with node id's Info (api.NodeResponse).
func writeInfo(w http.ResponseWriter, s *session.Session, id string) error {
	info, err := s.Info(id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.NodeResponse{Info: info})
	return nil
}

// handleInterrupt answers with the node's info as it was when told, so
// that the caller can say whether anything was in flight (in_flight).
func (d *Daemon) handleInterrupt(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	id := r.PathValue("node")
	info, err := s.Info(id)
	if err != nil {
		return err
	}
	if err := s.Interrupt(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (d *Daemon) handleSettings(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	if r.Method == http.MethodPut {
		var st session.Settings
		if err := readJSON(r, &st); err != nil {
			return err
		}
		if st.Idle < 0 {
			return badRequest(errors.New("idle must be a duration of 0 (never) or more"))
		}
		if _, err := mcpserver.ParseFilter(st.Expose); err != nil {
			return badRequest(fmt.Errorf("expose: %w", err))
		}
		if _, err := session.ParsePolicy(st.Policy); err != nil {
			return badRequest(fmt.Errorf("policy: %w", err))
		}
		if st.AskTimeout < 0 {
			return badRequest(errors.New("ask_timeout must be a duration of 0 (the default, 2m) or more"))
		}
		if err := s.SetSettings(st); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, s.Settings())
	return nil
}

func (d *Daemon) handleSync(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	id := r.PathValue("node")
	if _, err := s.Settled(r.Context(), id); err != nil {
		return err
	}
	if err := s.Sync(r.Context(), id); err != nil {
		return nodeFailed(err, api.CodeStartFailed, nil, id)
	}
	return writeInfo(w, s, id)
}

func (d *Daemon) handleTools(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	tools, err := s.Tools(r.Context(), r.PathValue("node"))
	if err != nil {
		return nodeFailed(err, api.CodeCallFailed, nil, "")
	}
	writeJSON(w, http.StatusOK, tools)
	return nil
}

// toolsetEntry is api.Tool with the tool as the node's *mcp.Tool: the
// shallower field writes the "tool" key, without encoding it twice.
type toolsetEntry struct {
	api.Tool
	MCPTool *mcp.Tool `json:"tool"`
}

func (d *Daemon) handleToolset(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	// ?now=1 (older clients) asked not to wait for nodes that are
	// starting; no listing waits now.
	entries := s.Toolset(r.Context()).Tools()
	out := make([]toolsetEntry, len(entries))
	for i, e := range entries {
		out[i] = toolsetEntry{Tool: api.Tool{Node: e.Node, Qualified: e.Qualified, LLMName: e.LLMName}, MCPTool: e.Tool}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (d *Daemon) handleEvents(w http.ResponseWriter, r *http.Request) {
	s, err := d.sessionOf(r, false)
	if err != nil {
		writeErr(w, err)
		return
	}
	sub := s.Subscribe(1024)
	defer sub.Close()
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	flush(w)
	enc := json.NewEncoder(w)
	ctx := r.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C:
			if !ok {
				return
			}
			if err := enc.Encode(ev); err != nil {
				return
			}
			// Send what is queued in one write.
			for more := true; more; {
				select {
				case ev, ok := <-sub.C:
					if !ok {
						flush(w)
						return
					}
					if err := enc.Encode(ev); err != nil {
						return
					}
				default:
					more = false
				}
			}
			flush(w)
		}
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
