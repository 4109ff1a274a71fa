package node

import "github.com/modelcontextprotocol/go-sdk/mcp"

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

// NewToolset builds a Toolset. Nodes keep their order; tools keep the order
// each node lists them in.
func NewToolset(nodes []NodeTools) *Toolset {
	panic("TODO: implemented by the naming work")
}

// Tools returns every entry. The slice must not be modified.
func (t *Toolset) Tools() []ToolEntry { return t.entries }

// Lookup finds a tool by qualified or LLM-safe name.
func (t *Toolset) Lookup(name string) (ToolEntry, bool) {
	i, ok := t.byName[name]
	if !ok {
		return ToolEntry{}, false
	}
	return t.entries[i], true
}
