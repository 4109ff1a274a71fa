package mcpconf

import (
	"encoding/json"
	"fmt"
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
	// Roots are the folders offered to the server as MCP roots.
	Roots []string `json:"roots,omitempty"`
	// Restart is the node's restart policy (defined by the mcp node kind).
	Restart string `json:"restart,omitempty"`
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
	}
	// Marshalling strings, a map of strings, a bool and a number cannot fail.
	raw, _ := json.Marshal(opts)
	return node.Spec{ID: id, Kind: Kind, Command: c.Command, Cwd: c.Cwd, Env: c.Env, Options: raw}
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
	}
	return s, o, nil
}
