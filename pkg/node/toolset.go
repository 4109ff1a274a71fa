package node

import (
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NodeTools is one node's tools, the input of NewToolset.
type NodeTools struct {
	Node  string
	Tools []*mcp.Tool
}

// ToolEntry is one tool of a Toolset.
type ToolEntry struct {
	Node      string    // node id
	Tool      *mcp.Tool // the node's tool, as the node lists it
	Qualified string    // "node.tool"
	LLMName   string    // ^[a-zA-Z0-9_-]{1,64}$, unique within the Toolset
}

// Toolset is the tools of a set of nodes under qualified and LLM-safe names
// (the tools_from_nodes of the design), with a router from either name back
// to (node, tool). A Toolset is immutable and safe for concurrent use.
type Toolset struct {
	entries []ToolEntry
	byName  map[string]int // qualified and LLM names → index in entries
}

// hashLevels are the hash lengths a colliding LLM name climbs through:
// level 0 is LLMName itself, then ever longer hashes until names differ.
var hashLevels = [...]int{0, hashHexLen, 16, 32}

// NewToolset builds a Toolset. Nodes keep their order; tools keep the order
// each node lists them in. A nil tool, or a second tool with the same
// qualified name (a node listing one name twice), is left out: it could not
// be routed to.
//
// LLM names are unique: every tool whose LLMName is shared with another tool
// gets the hash form instead, so which tool gets which name depends only on
// the set of names, never on their order.
func NewToolset(nodes []NodeTools) *Toolset {
	n := 0
	for _, nt := range nodes {
		n += len(nt.Tools)
	}
	t := &Toolset{
		entries: make([]ToolEntry, 0, n),
		byName:  make(map[string]int, 2*n),
	}
	for _, nt := range nodes {
		for _, tool := range nt.Tools {
			if tool == nil {
				continue
			}
			q := QualifiedName(nt.Node, tool.Name)
			if _, dup := t.byName[q]; dup {
				continue
			}
			t.byName[q] = len(t.entries)
			t.entries = append(t.entries, ToolEntry{
				Node:      nt.Node,
				Tool:      tool,
				Qualified: q,
				LLMName:   LLMName(nt.Node, tool.Name),
			})
		}
	}
	t.disambiguate()
	for i := range t.entries {
		// Qualified names contain a dot and LLM names never do, so the
		// two kinds of key cannot clash.
		t.byName[t.entries[i].LLMName] = i
	}
	return t
}

// ToolsetOf builds a Toolset from tools each given with its node id, as a
// flat listing gives them (the daemon's, a catalogue's): nodes keep the
// order they first come in, tools the order they come in.
func ToolsetOf(tools iter.Seq2[string, *mcp.Tool]) *Toolset {
	var nodes []NodeTools
	at := map[string]int{}
	for id, tool := range tools {
		i, ok := at[id]
		if !ok {
			i = len(nodes)
			at[id] = i
			nodes = append(nodes, NodeTools{Node: id})
		}
		nodes[i].Tools = append(nodes[i].Tools, tool)
	}
	return NewToolset(nodes)
}

// disambiguate gives every entry whose LLM name is shared a longer hash
// until all names differ. Each round only looks at the current set of
// names, so the outcome does not depend on the order of the entries.
func (t *Toolset) disambiguate() {
	var level []uint8 // allocated on the first collision only
	seen := make(map[string]int, len(t.entries))
	for range len(hashLevels) + 1 {
		clear(seen)
		collided := false
		for i := range t.entries {
			name := t.entries[i].LLMName
			if j, ok := seen[name]; ok {
				if level == nil {
					level = make([]uint8, len(t.entries))
				}
				if j >= 0 {
					t.bump(level, j)
					seen[name] = -1 // the first holder is bumped once
				}
				t.bump(level, i)
				collided = true
				continue
			}
			seen[name] = i
		}
		if !collided {
			return
		}
	}
}

func (t *Toolset) bump(level []uint8, i int) {
	if int(level[i]) >= len(hashLevels)-1 {
		return
	}
	level[i]++
	e := &t.entries[i]
	e.LLMName = hashedName(llmBase(e.Node, e.Tool.Name), e.Qualified, hashLevels[level[i]])
}

// Tools returns every entry. The slice must not be modified.
func (t *Toolset) Tools() []ToolEntry {
	if t == nil {
		return nil
	}
	return t.entries
}

// Len returns the number of tools.
func (t *Toolset) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Lookup finds a tool by qualified or LLM-safe name.
func (t *Toolset) Lookup(name string) (ToolEntry, bool) {
	if t == nil {
		return ToolEntry{}, false
	}
	i, ok := t.byName[name]
	if !ok {
		return ToolEntry{}, false
	}
	return t.entries[i], true
}

// Resolve returns the node id and node-local tool name behind a qualified
// or LLM-safe name.
func (t *Toolset) Resolve(name string) (node, tool string, ok bool) {
	e, ok := t.Lookup(name)
	if !ok {
		return "", "", false
	}
	return e.Node, e.Tool.Name, true
}
