package clientconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/node"
)

// namedServers keeps the servers in the session's order in the object.
type namedServers []struct {
	name string
	srv  mcpconf.Entry
}

func (ns namedServers) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range ns {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(s.name)
		v, err := json.Marshal(s.srv)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Export writes the mcp nodes of specs as a .mcp.json (Claude Code's
// format, which `nerve mcp import` reads back to the same specs), in their
// order; other kinds are left out. Values are written as the specs keep
// them: ${VAR} references stay references, never their values. dir is the
// folder the file is written to: a server started there is written
// without "cwd", as an import of the file starts it there. notes say what
// a .mcp.json cannot hold (options of nerve's own) and literal values in
// env or headers, which may be secrets.
func Export(specs []node.Spec, dir string) (data []byte, notes []string, err error) {
	var out namedServers
	for _, spec := range specs {
		if spec.Kind != mcpconf.Kind {
			continue
		}
		srv, o, err := mcpconf.ServerFromSpec(spec)
		if err != nil {
			return nil, nil, err
		}
		e := mcpconf.Entry{Type: srv.Transport, URL: srv.URL, Headers: srv.Headers, Env: srv.Env, InheritEnv: srv.InheritEnv, Disabled: srv.Disabled}
		if len(srv.Command) > 0 {
			e.Command, e.Args = srv.Command[0], srv.Command[1:]
		}
		if srv.Cwd != "" && (dir == "" || filepath.Clean(srv.Cwd) != filepath.Clean(dir)) {
			e.Cwd = srv.Cwd
		}
		if srv.Timeout > 0 {
			e.Timeout = srv.Timeout.String()
		}
		if srv.StartTimeout > 0 {
			e.StartTimeout = srv.StartTimeout.String()
		}
		if lost := nerveOnly(o); len(lost) > 0 {
			notes = append(notes, fmt.Sprintf("node %s: %s %s no place in a .mcp.json and %s left out (nerve keeps %s in the node's spec)",
				spec.ID, strings.Join(lost, ", "), plural(len(lost), "has", "have"), plural(len(lost), "was", "were"), plural(len(lost), "it", "them")))
		}
		for _, what := range []struct {
			key string
			m   map[string]string
		}{{"env", srv.Env}, {"headers", srv.Headers}} {
			for _, k := range slices.Sorted(maps.Keys(what.m)) {
				if v := what.m[k]; v != "" && !strings.Contains(v, "${") && looksSecret(k) {
					notes = append(notes, fmt.Sprintf("node %s: %s %s is written as its value, not a ${VAR}: if it is a secret, keep it out of the file (write \"${%s}\" and set the variable)", spec.ID, what.key, k, varName(k)))
				}
			}
		}
		out = append(out, struct {
			name string
			srv  mcpconf.Entry
		}{spec.ID, e})
	}
	data, err = json.MarshalIndent(struct {
		MCPServers namedServers `json:"mcpServers"`
	}{out}, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return append(data, '\n'), notes, nil
}

// nerveOnly names the options of o that a .mcp.json has no key for.
func nerveOnly(o mcpconf.Options) []string {
	var lost []string
	add := func(set bool, name string) {
		if set {
			lost = append(lost, name)
		}
	}
	add(o.Ping != "", "ping")
	add(len(o.Roots) > 0, "roots")
	add(o.Restart != "", "restart")
	add(o.Start != "", "start")
	add(o.Idle > 0, "idle")
	add(o.Retry != nil, "retry")
	add(o.OAuth != nil, "oauth")
	add(o.RequireTools, "require_tools")
	return lost
}

// looksSecret reports whether a variable or header of this name usually
// holds a credential.
func looksSecret(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"token", "key", "secret", "password", "passwd", "auth", "cookie", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// varName makes a variable name of a header's or variable's name.
func varName(k string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, k))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
