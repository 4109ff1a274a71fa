package mcpconf

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind of an MCP server.
const Kind = "mcp"

// Options are the kind-specific settings of an "mcp" node (node.Spec.Options).
// The mcp node kind decodes them with Spec.DecodeOptions.
type Options struct {
	// Transport is "stdio", "http" or "sse".
	Transport string `json:"transport"`
	// URL and Headers are for http and sse; values may hold ${VAR}.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// InheritEnv passes nerve's whole environment to a stdio server.
	InheritEnv bool `json:"inherit_env,omitempty"`
	// Timeout bounds each call; zero means the node's default.
	Timeout node.Duration `json:"timeout,omitempty"`
	// StartTimeout bounds the start (connect, initialize, listing); zero
	// means the node's default (30 s). A server that downloads itself on
	// its first run (npx -y) may need minutes.
	StartTimeout node.Duration `json:"start_timeout,omitempty"`
	// Ping is how often an idle stdio server is pinged to find it hung: a
	// duration, or "off"; empty means the mcp kind's default (30 s).
	Ping string `json:"ping,omitempty"`
	// Roots are the folders offered to the server as MCP roots.
	Roots []string `json:"roots,omitempty"`
	// Restart is the node's restart policy (defined by the mcp node kind).
	Restart string `json:"restart,omitempty"`
	// Start is "eager" (start with the session) or "lazy" (with a tool
	// catalogue, start on the first call); empty: lazy for a stdio server
	// with a catalogue, eager otherwise.
	Start string `json:"start,omitempty"`
	// Idle, if set, stops the server after that long without a call; the
	// next call starts it again.
	Idle node.Duration `json:"idle,omitempty"`
	// OAuth tunes OAuth authorization of an http server. Without it the node
	// still answers a server's 401 with discovery and dynamic client
	// registration; set it for a pre-registered client, a client ID
	// metadata document, fixed scopes or another redirect URL.
	OAuth *OAuth `json:"oauth,omitempty"`
}

// OAuth is the OAuth 2.1 client configuration of an "mcp" node (MCP
// authorization, spec 2025-11-25). String values may hold ${VAR}, expanded
// at each start: keep a client secret out of the saved spec with
// "client_secret": "${MY_SECRET}".
type OAuth struct {
	// ClientID and ClientSecret are a client registered beforehand with
	// the authorization server; an empty secret means a public client.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientMetadataURL is an https URL serving this client's metadata
	// document, used as its client_id where the server supports that.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// Scopes replaces the scopes the server asks for; empty means those
	// the server names in its challenge or metadata.
	Scopes []string `json:"scopes,omitempty"`
	// RedirectURL is where the authorization server sends the browser
	// back; empty means the mcp node kind's default.
	RedirectURL string `json:"redirect_url,omitempty"`
	// Grant is "authorization_code" (the default: a person signs in) or
	// "client_credentials" (machines and CI: ClientID and ClientSecret
	// get the token, nobody signs in; the OAuth client-credentials
	// extension, SEP-1046).
	Grant string `json:"grant,omitempty"`
}

// Spec returns the spec of an "mcp" node with id that runs s. s is kept as
// written, ${VAR} references included: specs are saved unexpanded.
func (s Server) Spec(id string) node.Spec {
	c := s.clone()
	opts := Options{
		Transport:  c.Transport,
		URL:        c.URL,
		Headers:    c.Headers,
		InheritEnv: c.InheritEnv,
		Timeout:    node.Duration(c.Timeout),

		StartTimeout: node.Duration(c.StartTimeout),
	}
	// Marshalling strings, a map of strings, a bool and a number cannot fail.
	raw, _ := json.Marshal(opts)
	// A server its file turns off is added stopped (node.Spec.Stopped).
	return node.Spec{ID: id, Kind: Kind, Command: c.Command, Cwd: c.Cwd, Env: c.Env, Options: raw, Stopped: c.Disabled}
}

// ServerFromSpec is the reverse of Server.Spec: the server an "mcp" node's
// spec describes (named after the node), and its options.
func ServerFromSpec(spec node.Spec) (Server, Options, error) {
	var o Options
	if spec.Kind != Kind {
		return Server{}, o, fmt.Errorf("node %q is a %s node, not an %s node", spec.ID, spec.Kind, Kind)
	}
	if err := spec.DecodeOptions(&o); err != nil {
		return Server{}, o, err
	}
	c := spec.Clone()
	s := Server{
		Name: spec.ID, Transport: o.Transport, Command: c.Command, Cwd: c.Cwd, Env: c.Env,
		URL: o.URL, Headers: cloneMap(o.Headers), InheritEnv: o.InheritEnv, Timeout: time.Duration(o.Timeout),
		StartTimeout: time.Duration(o.StartTimeout), Disabled: spec.Stopped,
	}
	if s.Transport == "" {
		switch {
		case len(s.Command) > 0:
			s.Transport = "stdio"
		case isSSEURL(s.URL):
			s.Transport = "sse"
		default:
			s.Transport = "http"
		}
	}
	switch {
	case s.Transport != "stdio" && s.Transport != "http" && s.Transport != "sse":
		return Server{}, o, fmt.Errorf("mcp node %q: unknown transport %q: use \"stdio\", \"http\" or \"sse\"", spec.ID, s.Transport)
	case s.Transport == "stdio" && len(s.Command) == 0:
		return Server{}, o, fmt.Errorf("mcp node %q: a stdio server needs a command", spec.ID)
	case s.Transport != "stdio" && s.URL == "":
		return Server{}, o, fmt.Errorf("mcp node %q: an %s server needs a url", spec.ID, s.Transport)
	case o.OAuth != nil && s.Transport != "http":
		return Server{}, o, fmt.Errorf("mcp node %q: oauth is for the http transport, not %s: remove the oauth options, or use the server's streamable HTTP URL", spec.ID, s.Transport)
	case o.OAuth != nil && o.OAuth.Grant != "" && o.OAuth.Grant != "authorization_code" && o.OAuth.Grant != "client_credentials":
		return Server{}, o, fmt.Errorf("mcp node %q: oauth grant %q: use authorization_code (a person signs in) or client_credentials (client_id and client_secret, no person)", spec.ID, o.OAuth.Grant)
	case o.OAuth != nil && o.OAuth.Grant == "client_credentials" && (o.OAuth.ClientID == "" || o.OAuth.ClientSecret == ""):
		return Server{}, o, fmt.Errorf("mcp node %q: oauth grant client_credentials needs client_id and client_secret (e.g. \"client_secret\": \"${MY_SECRET}\")", spec.ID)
	case o.OAuth != nil && o.OAuth.ClientSecret != "" && o.OAuth.ClientID == "":
		return Server{}, o, fmt.Errorf("mcp node %q: oauth client_secret needs the client_id it belongs to", spec.ID)
	case o.OAuth != nil && o.OAuth.ClientMetadataURL != "" && !strings.HasPrefix(o.OAuth.ClientMetadataURL, "https://"):
		return Server{}, o, fmt.Errorf("mcp node %q: oauth client_metadata_url %q must be an https URL with a path", spec.ID, o.OAuth.ClientMetadataURL)
	}
	return s, o, nil
}
