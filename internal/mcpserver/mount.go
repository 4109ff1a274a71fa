package mcpserver

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// Mount is a handler served beside the MCP endpoint on its listener: the
// dashboard at /ui/ (internal/dashboard), the metrics at /metrics
// (internal/telemetry/metrics). Its requests
// pass the endpoint's guards before the handler sees them: a loopback
// Host and no foreign Origin (refuseForeign), then the mount's own
// credentials (401 and the connection closed without them, as the
// endpoint refuses a request without its token); a request that carried
// them marks its connection authenticated for the connection limits
// (limit.go), so a flood never evicts it.
type Mount struct {
	// Prefix is the path the mount serves, ending in "/" ("/ui/"); the
	// path without its slash redirects to it.
	Prefix string
	// Path, instead of Prefix, is the one path the mount serves
	// ("/metrics").
	Path string
	// Handler serves the requests under Prefix.
	Handler http.Handler
	// Authorized reports whether r carries the mount's credentials.
	// Required.
	Authorized func(r *http.Request) bool
	// Refused is the 401 answer's text: what to do to get in.
	Refused string
}

// router sends each request to the mount whose prefix it has, else to
// the MCP endpoint.
type router struct {
	mcp    http.Handler
	mounts []Mount
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, m := range rt.mounts {
		if m.Path != "" && r.URL.Path == m.Path ||
			m.Path == "" && (strings.HasPrefix(r.URL.Path, m.Prefix) || r.URL.Path == strings.TrimSuffix(m.Prefix, "/")) {
			rt.serve(m, w, r)
			return
		}
	}
	rt.mcp.ServeHTTP(w, r)
}

func (rt *router) serve(m Mount, w http.ResponseWriter, r *http.Request) {
	if refuseForeign(w, r) {
		return
	}
	if !m.Authorized(r) {
		w.Header().Set("Connection", "close")
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "unauthorized: "+m.Refused, http.StatusUnauthorized)
		return
	}
	markAuthenticated(r.Context())
	if m.Path == "" && r.URL.Path == strings.TrimSuffix(m.Prefix, "/") {
		http.Redirect(w, r, m.Prefix, http.StatusMovedPermanently)
		return
	}
	m.Handler.ServeHTTP(w, r)
}

// checkMounts refuses a mount that would serve without a guard or shadow
// the MCP endpoint.
func checkMounts(ms []Mount) error {
	for _, m := range ms {
		switch {
		case m.Handler == nil || m.Authorized == nil:
			return fmt.Errorf("mcpserver: the mount at %q needs a Handler and Authorized", m.Prefix+m.Path)
		case m.Path != "":
			if m.Prefix != "" || !strings.HasPrefix(m.Path, "/") || len(m.Path) < 2 || strings.HasPrefix(m.Path, "/mcp") {
				return fmt.Errorf("mcpserver: mount path %q: use one path such as /metrics that is not under /mcp, and no Prefix", m.Path)
			}
		case !strings.HasPrefix(m.Prefix, "/") || !strings.HasSuffix(m.Prefix, "/") || len(m.Prefix) < 3 || strings.HasPrefix("/mcp/", m.Prefix) || strings.HasPrefix(m.Prefix, "/mcp/"):
			return fmt.Errorf("mcpserver: mount prefix %q: use a path such as /ui/ that is not /mcp/", m.Prefix)
		}
	}
	return nil
}

// BearerAuthorized is a mount's Authorized for the endpoint's own token:
// the request must carry `Authorization: Bearer TOKEN` (/metrics).
func BearerAuthorized(token string) func(*http.Request) bool {
	return func(r *http.Request) bool { return hasBearer(r, token) }
}

// hasBearer reports whether r carries `Authorization: Bearer token`.
func hasBearer(r *http.Request, token string) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(token)) == 1
}
