package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nerve-dev/nerve/internal/mcpconf"
)

// configPrefix starts the name of every MCP config file the node writes, so
// CleanupStale can find left-overs and nothing else.
const configPrefix = "claude-mcp-"

// SessionServerName is the name Claude sees the session's own MCP endpoint
// under (its tools appear as mcp__nerve__<node>__<tool>).
const SessionServerName = "nerve"

// Endpoint is the session's MCP endpoint as Claude reaches it.
type Endpoint struct {
	URL   string // streamable HTTP, e.g. http://127.0.0.1:PORT/mcp
	Token string // bearer token
}

// loadServers reads opt (a path or inline JSON) and expands its ${VAR}s.
func loadServers(opt string, lookup func(string) (string, bool)) ([]mcpconf.Server, error) {
	if strings.TrimSpace(opt) == "" {
		return nil, nil
	}
	var cfg *mcpconf.Config
	var err error
	name := opt
	if strings.HasPrefix(strings.TrimSpace(opt), "{") {
		name = "inline --mcp-config"
		cfg, err = mcpconf.Parse(name, []byte(opt))
	} else {
		cfg, err = mcpconf.Load(opt)
	}
	if err != nil {
		return nil, err
	}
	out := make([]mcpconf.Server, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		if s.Disabled {
			continue // turned off in the file: Claude would not run it either
		}
		x, err := s.Expand(lookup, name)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// claudeConfig renders servers (expanded) and the session endpoint, if any,
// as Claude Code's config JSON.
func claudeConfig(servers []mcpconf.Server, ep *Endpoint) ([]byte, []string, error) {
	m := make(map[string]mcpconf.Entry, len(servers)+1)
	names := make([]string, 0, len(servers)+1)
	for _, s := range servers {
		var c mcpconf.Entry
		switch s.Transport {
		case "http", "sse":
			c = mcpconf.Entry{Type: s.Transport, URL: s.URL, Headers: s.Headers}
		default:
			if len(s.Command) == 0 {
				return nil, nil, fmt.Errorf("MCP server %q has no command", s.Name)
			}
			c = mcpconf.Entry{Command: s.Command[0], Args: s.Command[1:], Env: s.Env, Cwd: s.Cwd}
		}
		m[s.Name] = c
		names = append(names, s.Name)
	}
	if ep != nil {
		if _, dup := m[SessionServerName]; dup {
			return nil, nil, fmt.Errorf("the MCP config has a server named %q, the name --session-tools uses: rename that server", SessionServerName)
		}
		m[SessionServerName] = mcpconf.Entry{Type: "http", URL: ep.URL, Headers: map[string]string{"Authorization": "Bearer " + ep.Token}}
		names = append(names, SessionServerName)
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": m}, "", "  ")
	return data, names, err
}

// writeConfig writes data to a new file, mode 0600, in dir (created 0700 if
// missing; an existing one is made 0700). The file name is unique, so two
// starts never share one.
func writeConfig(dir string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the folder for Claude's MCP config: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("making %s private: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, configPrefix+"*.json")
	if err != nil {
		return "", fmt.Errorf("writing Claude's MCP config: %w", err)
	}
	// CreateTemp makes the file 0600; say so anyway in case that changes.
	if err := f.Chmod(0o600); err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing Claude's MCP config %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// cleanupDepth bounds the walk of CleanupStale: node folders sit at
// sessions/<session>/nodes/<id>/.
const cleanupDepth = 5

// CleanupStale removes the MCP config files that claude nodes wrote under
// dir and did not remove because their daemon was killed. The daemon calls
// it once at start, before it starts any node, with the folder that holds
// every session (paths.Sessions). A missing dir is not an error.
func CleanupStale(dir string) error {
	base := strings.Count(filepath.Clean(dir), string(filepath.Separator))
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			errs = append(errs, err)
			return nil
		}
		if d.IsDir() {
			if strings.Count(path, string(filepath.Separator))-base >= cleanupDepth {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if d.Type().IsRegular() && strings.HasPrefix(name, configPrefix) && strings.HasSuffix(name, ".json") {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing left-over Claude MCP configs under %s: %w", dir, errors.Join(errs...))
	}
	return nil
}
