package mcpserver

import (
	"fmt"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Filter is a list of tool globs that chooses what an MCP client of the
// session may see and call (issue 18, item 3): comma-separated globs over
// node.tool (path.Match syntax: * ? [a-z]), "!" before one to exclude. A
// glob without a dot is over node ids ("fs" is "fs.*"). A tool is exposed
// when no glob includes (only exclusions: everything else) or one
// includes it, and no exclusion matches it:
//
//	fs.*,github.*,!github.delete_*
//
// The zero Filter exposes everything.
type Filter struct {
	src      string
	include  []string
	exclude  []string
	readOnly bool
}

// ParseFilter reads a Filter from globs; an empty string exposes everything.
func ParseFilter(globs string) (Filter, error) {
	f := Filter{src: strings.TrimSpace(globs)}
	for item := range strings.SplitSeq(globs, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		pat, neg := strings.CutPrefix(item, "!")
		pat = strings.TrimSpace(pat)
		if pat == "" {
			return Filter{}, fmt.Errorf("tool filter %q: %q excludes nothing: write a glob after the !, e.g. !github.delete_*", globs, item)
		}
		if _, err := path.Match(pat, ""); err != nil {
			return Filter{}, fmt.Errorf("tool filter %q: glob %q is malformed (%w): use * ? and [a-z] over node.tool, e.g. fs.*,!fs.write_*", globs, pat, err)
		}
		if neg {
			f.exclude = append(f.exclude, pat)
		} else {
			f.include = append(f.include, pat)
		}
	}
	return f, nil
}

// String returns the globs the filter was read from.
func (f Filter) String() string { return f.src }

// IsZero reports whether f exposes everything.
func (f Filter) IsZero() bool { return len(f.include) == 0 && len(f.exclude) == 0 && !f.readOnly }

// match reports whether glob p chooses node id's tool (tool "" asks about
// the node as a whole: a dotless glob, or one whose tool part is "*").
func match(p, id, tool string) bool { return node.MatchTool(p, id, tool) }

// allows reports whether f exposes tool t of node id.
func (f Filter) allows(id string, t *mcp.Tool) bool {
	if f.readOnly && (t.Annotations == nil || !t.Annotations.ReadOnlyHint) {
		return false
	}
	for _, p := range f.exclude {
		if match(p, id, t.Name) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if match(p, id, t.Name) {
			return true
		}
	}
	return false
}

// allowsNode reports whether f may expose some tool of node id: an
// inclusion names the node, and no exclusion hides all of it. The
// management tools show and restart only such nodes.
func (f Filter) allowsNode(id string) bool {
	for _, p := range f.exclude {
		if match(p, id, "") {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		np, _, _ := strings.Cut(p, ".")
		if ok, _ := path.Match(np, id); ok {
			return true
		}
	}
	return false
}

// hidesName reports whether an exclusion names a meta-tool of the
// server (search_tools, list_nodes, …), which no inclusion needs to name.
func (f Filter) hidesName(name string) bool {
	for _, p := range f.exclude {
		if !strings.Contains(p, ".") {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// Exposure is every filter a server applies: the session's default
// (`nerve session set expose`) and the client's own (`--tools`,
// `--read-only`). A tool must pass all of them, so a client can narrow
// what the session exposes but never widen it.
type Exposure []Filter

// Allows reports whether the tool t of node id is exposed.
func (e Exposure) Allows(id string, t *mcp.Tool) bool {
	for _, f := range e {
		if !f.allows(id, t) {
			return false
		}
	}
	return true
}

// AllowsNode reports whether node id may be shown and restarted.
func (e Exposure) AllowsNode(id string) bool {
	for _, f := range e {
		if !f.allowsNode(id) {
			return false
		}
	}
	return true
}

// hidesName reports whether a filter hides the meta-tool name.
func (e Exposure) hidesName(name string) bool {
	for _, f := range e {
		if f.hidesName(name) {
			return true
		}
	}
	return false
}

// readOnly reports whether a filter exposes read-only tools alone.
func (e Exposure) readOnly() bool {
	for _, f := range e {
		if f.readOnly {
			return true
		}
	}
	return false
}

// ReadOnlyFilter exposes only tools annotated readOnlyHint (the server
// says they change nothing).
func ReadOnlyFilter() Filter { return Filter{src: "(read-only)", readOnly: true} }
