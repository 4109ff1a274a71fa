package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two eras of MCP a client may speak to nerve (docs/mcp-server.md,
// "Protocol eras"): 2025-11-25 and before, with initialize and a session
// (Mcp-Session-Id over HTTP), the server asking the client in the middle
// of a call; and 2026-07-28, with no session, every request carrying its
// own _meta (protocol version, client capabilities, log level), and a
// question of the server answered by returning input_required and taking
// the client's retry (mrtr.go).

// modernProtocol is the first version of the stateless era.
const modernProtocol = "2026-07-28"

// protocolHeader is the streamable HTTP header that names the version of
// a request.
const protocolHeader = "Mcp-Protocol-Version"

// Keys of a request's _meta that describe the client's hop to nerve: the
// node's own client states its own, so they are not passed on.
var hopMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo}

// nodeMeta is the _meta of a client's request as a node gets it: without
// the keys of the client's hop to nerve (hopMeta), whose values would be
// taken for the node's own by its MCP client. The client's capabilities
// and log level stay: they are the client's for this request, which a
// node of 2026-07-28 passes on, so its server asks only what the client
// can answer and logs at the level the client asked for.
func nodeMeta(meta map[string]any) map[string]any {
	if meta == nil {
		return nil
	}
	found := false
	for _, k := range hopMeta {
		if _, ok := meta[k]; ok {
			found = true
		}
	}
	if !found {
		return meta
	}
	m := maps.Clone(meta)
	for _, k := range hopMeta {
		delete(m, k)
	}
	return m
}

// modernRequest reports whether req is of the 2026-07-28 era: its _meta
// (or, on a stdio connection, the session it came on) names that version.
func modernRequest(req interface{ ProtocolVersion() string }) bool {
	return req.ProtocolVersion() >= modernProtocol
}

// modernSession reports whether ss speaks the 2026-07-28 era: the server
// may not send it requests (sampling, elicitation) of its own.
func modernSession(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= modernProtocol
}

// isModernHTTP reports whether the streamable HTTP request r is of the
// 2026-07-28 era, which the SDK serves only statelessly: one with no
// session whose MCP-Protocol-Version header names that era (or a version
// after it, which the stateless handler refuses in the era's words), or
// whose body is server/discover or carries that era's _meta. Everything
// else — initialize, and every request of a session — is the other era's.
// The body is read to decide and put back. A request it answers itself
// (handled) is one whose body is over the cap (413), or a tasks method
// whose Mcp-Name header is not its taskId (-32020, which the SDK checks
// for its own methods only).
func isModernHTTP(w http.ResponseWriter, r *http.Request) (modern, handled bool) {
	if r.Header.Get(sessionHeader) != "" {
		return false, false
	}
	byHeader := strings.TrimSpace(r.Header.Get(protocolHeader)) >= modernProtocol
	if r.Method != http.MethodPost || r.Body == nil {
		return byHeader, false
	}
	if byHeader && !strings.HasPrefix(strings.TrimSpace(r.Header.Get("Mcp-Method")), "tasks/") {
		return true, false // no need to read the body
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		// The connection cannot carry another request after a body
		// that could not be read (a stalled one timed out).
		w.Header().Set("Connection", "close")
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		}
		return false, true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta   map[string]any `json:"_meta"`
			TaskID *string        `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil { // a batch, or not JSON: the SDK says what is wrong
		return byHeader, false
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	modern = byHeader || msg.Method == "server/discover" || v >= modernProtocol
	switch msg.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		name := strings.TrimSpace(r.Header.Get("Mcp-Name"))
		if modern && (msg.Params.TaskID == nil || name != *msg.Params.TaskID) {
			writeHeaderMismatch(w, msg.ID, fmt.Sprintf("the Mcp-Name header %q is not the request's params.taskId: a %s request carries its task's id in both", name, msg.Method))
			return true, true
		}
	}
	return modern, false
}

// writeHeaderMismatch answers a request whose headers do not match its
// body: HTTP 400 and JSON-RPC -32020.
func writeHeaderMismatch(w http.ResponseWriter, id json.RawMessage, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": mcp.CodeHeaderMismatch, "message": message}})
}

// clientError returns err's JSON-RPC error when a node's server refused
// the call for a capability the client did not declare (-32021): that is
// the client's to know, as the protocol error it is, not a tool's failure.
func clientError(err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) && je.Code == mcp.CodeMissingRequiredClientCapabilities {
		return je
	}
	return nil
}

// listCacher is an mcp node that knows how long its server said a list
// stays good (2026-07-28's ttlMs and cacheScope, kept in its catalogue):
// what is left of it, and its scope. A node without it has said nothing.
type listCacher interface {
	ListCache(list string) (left time.Duration, scope string)
}

// cacheLists names the lists by method, as a node's catalogue does.
var cacheLists = map[string]string{
	"tools/list":               "tools",
	"resources/list":           "resources",
	"resources/templates/list": "resource_templates",
	"prompts/list":             "prompts",
}

// setCacheable says how long a client may keep a list (SEP-2549): always
// private — a session's lists are its person's, behind the endpoint's
// token, and shaped by the URL's filters — and, in node mode, for as long
// as the server behind the node said its list stays good, if it did. A
// session's lists change with its nodes, of which nerve tells the client
// (list_changed, subscriptions/listen): they are given no time (ttlMs 0).
func (s *Server) setCacheable(ctx context.Context, req mcp.Request, c *mcp.Cacheable) {
	c.CacheScope = "private"
	list, ok := cacheLists[methodOf(req)]
	if !ok || s.opts.Node == "" {
		return
	}
	mn, err := s.b.MCPNode(ctx, s.opts.Node)
	if err != nil {
		return
	}
	if lc, ok := mn.(listCacher); ok {
		if left, _ := lc.ListCache(list); left > 0 {
			c.TTLMs = int(left.Milliseconds())
		}
	}
}

// methodOf names the method of a list request by its params.
func methodOf(req mcp.Request) string {
	switch req.GetParams().(type) {
	case *mcp.ListToolsParams:
		return "tools/list"
	case *mcp.ListResourcesParams:
		return "resources/list"
	case *mcp.ListResourceTemplatesParams:
		return "resources/templates/list"
	case *mcp.ListPromptsParams:
		return "prompts/list"
	}
	return ""
}

// withData keeps what a node's server said in a JSON-RPC error the node
// wrapped: its code and its data (the SDK's encoding keeps the code of a
// wrapped error, not its data), with nerve's message around it. A
// resource not found says which URI (SEP-2164).
func withData(err error) error {
	var je *jsonrpc.Error
	if err == nil || !errors.As(err, &je) || len(je.Data) == 0 || err == error(je) {
		return err
	}
	return &jsonrpc.Error{Code: je.Code, Message: err.Error(), Data: je.Data}
}
