package clientconf

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Servers are the servers of one config file, each planned as an mcp node.
type Servers struct {
	// Servers are those that can be added, in file order.
	Servers []Server
	// Warnings are what nerve ignored in the file, each "file:line:col: …".
	Warnings []string
	// Bad are the servers written wrong, each error naming where.
	Bad []error
}

// Server is one server of a config file and the node it becomes.
type Server struct {
	// Name is the server's name in the file.
	Name string
	// Node is the node's id: Name made a node id, unique in its file.
	Node string
	// Spec is the node's spec; ${VAR} references are kept as written.
	Spec node.Spec
	srv  mcpconf.Server
}

// Load reads the config file at path (every format nerve reads: Claude
// Desktop and Claude Code, Cursor, VS Code's mcp.json and settings.json,
// a "servers" array) and plans its servers. An error means the file is
// not usable at all; servers written wrong are in Bad.
func Load(path string) (*Servers, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return plan(mcpconf.Load(abs))
}

// Parse is Load of data, the content of the file at path.
func Parse(path string, data []byte) (*Servers, error) {
	return plan(mcpconf.Parse(path, data))
}

func plan(cfg *mcpconf.Config, err error) (*Servers, error) {
	var bad *mcpconf.ServerErrors
	if err != nil && !errors.As(err, &bad) {
		return nil, err
	}
	out := &Servers{Warnings: cfg.Warnings}
	if bad != nil {
		out.Bad = bad.Errs
	}
	// Relative folders are relative to the config file's folder, where a
	// server with none is started.
	dir := filepath.Dir(cfg.Path)
	if !filepath.IsAbs(dir) {
		if d, err := filepath.Abs(dir); err == nil {
			dir = d
		}
	}
	used := map[string]bool{}
	for _, srv := range cfg.Servers {
		id := UniqueID(NodeID(srv.Name), used)
		switch {
		case srv.Transport != "stdio":
		case srv.Cwd == "":
			srv.Cwd = dir
		case !filepath.IsAbs(srv.Cwd) && !strings.Contains(srv.Cwd, "${") && !strings.HasPrefix(srv.Cwd, "~"):
			srv.Cwd = filepath.Join(dir, srv.Cwd)
		}
		out.Servers = append(out.Servers, Server{Name: srv.Name, Node: id, Spec: srv.Spec(id), srv: srv})
	}
	return out, nil
}

// NodeID makes a node id of an MCP server's name: lower case, characters
// a node id cannot hold made '-', at most 63 characters.
func NodeID(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b = append(b, byte(r))
		default:
			b = append(b, '-')
		}
	}
	id := strings.TrimLeft(string(b), "-_")
	if len(id) > 63 {
		id = strings.TrimRight(id[:63], "-_")
	}
	if id == "" {
		id = "mcp"
	}
	return id
}

// UniqueID returns id, or id-2, id-3, … when id is taken, and marks it used.
func UniqueID(id string, used map[string]bool) string {
	out := id
	for n := 2; used[out]; n++ {
		suffix := fmt.Sprintf("-%d", n)
		out = id[:min(len(id), 63-len(suffix))] + suffix
	}
	used[out] = true
	return out
}

// Transport is how nerve reaches the server: "stdio", "http" or "sse".
func (s *Server) Transport() string { return s.srv.Transport }

// Runs is what the server runs: its command line, or its URL.
func (s *Server) Runs() string {
	if s.srv.Transport == "stdio" {
		return strings.Join(s.srv.Command, " ")
	}
	return s.srv.URL
}

// Expand expands the server's ${VAR} references with lookup; the error
// names the first one lookup does not have (file, if not "", says where).
func (s *Server) Expand(lookup func(string) (string, bool), file string) error {
	_, err := s.srv.Expand(lookup, file)
	return err
}

// Nerve says why the server is nerve's own MCP server, or "" if it is not:
// a command that runs `nerve mcp serve` (nerve by name, the program self,
// or `go run …/cmd/nerve`), or a URL on own, this daemon's MCP endpoint.
// A session that contained it would list its own tools again under a new
// prefix, without end.
func (s *Server) Nerve(self, own string) string {
	srv := s.srv
	if srv.Transport != "stdio" {
		if own != "" {
			u, err1 := url.Parse(srv.URL)
			o, err2 := url.Parse(own)
			if err1 == nil && err2 == nil && u.Host == o.Host && strings.HasPrefix(u.Path, "/mcp") {
				return "it is this nerve's MCP endpoint (" + srv.URL + ")"
			}
		}
		return ""
	}
	argv := srv.Command
	if len(argv) == 0 {
		return ""
	}
	serve := false
	for i := 1; i+1 < len(argv); i++ {
		if argv[i] == "mcp" && argv[i+1] == "serve" {
			serve = true
			break
		}
	}
	if !serve {
		return ""
	}
	prog := filepath.Base(argv[0])
	switch {
	case strings.TrimSuffix(prog, ".exe") == "nerve":
	case sameFile(argv[0], self):
	case prog == "go" && slices.Contains(argv, "run") && slices.ContainsFunc(argv, func(a string) bool {
		return a == "./cmd/nerve" || strings.HasSuffix(a, "/cmd/nerve") || strings.HasSuffix(a, "/cmd/nerve@latest") || strings.Contains(a, "/cmd/nerve@")
	}):
	default:
		return ""
	}
	return "it runs `" + strings.Join(argv, " ") + "`, nerve's own MCP server"
}

// sameFile reports whether program (a path, or a name looked up in PATH)
// is the file self.
func sameFile(program, self string) bool {
	if self == "" {
		return false
	}
	p, err := exec.LookPath(program)
	if err != nil {
		return false
	}
	a, err1 := os.Stat(p)
	b, err2 := os.Stat(self)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
