package commander

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is what a Commander line asks for.
type Kind int

const (
	Empty    Kind = iota // nothing to do (blank line)
	NodeHelp             // `@fs ?`: list the node's tools
	ToolHelp             // `@fs read_file ?`, `@bash ?`, `@bash`: one tool's help
	Call                 // call Line.Tool of Line.Node with Line.Args
	Command              // `:node ls`: run Line.Argv through the command tree
	Search               // `@? read a file`: the session's tools that do what Line.Words say
)

func (k Kind) String() string {
	switch k {
	case Empty:
		return "empty"
	case NodeHelp:
		return "node-help"
	case ToolHelp:
		return "tool-help"
	case Call:
		return "call"
	case Command:
		return "command"
	case Search:
		return "search"
	}
	return "unknown"
}

// Form is how the arguments of a call were written.
type Form int

const (
	FormNone     Form = iota // no arguments: {}
	FormJSON                 // {"path": "/tmp/a"}
	FormKeyValue             // path=/tmp/a
	FormText                 // free text given to the tool's one string parameter
)

func (f Form) String() string {
	switch f {
	case FormNone:
		return "none"
	case FormJSON:
		return "json"
	case FormKeyValue:
		return "key=value"
	case FormText:
		return "text"
	}
	return "unknown"
}

// Line is a parsed Commander line.
type Line struct {
	Kind Kind
	// Node is the node id (NodeHelp, ToolHelp, Call).
	Node string
	// Tool is the tool's name as its node lists it (ToolHelp, Call).
	Tool string
	// Args is the call's arguments, always a JSON object, with block
	// references resolved (Call).
	Args json.RawMessage
	// Form is how Args were written (Call).
	Form Form
	// Param is the parameter that received free text (Call with FormText).
	Param string
	// Argv is the words after ':' (Command), quotes removed.
	Argv []string
	// Words are what the tool should do (Search).
	Words string
	// Input is the line as typed, trimmed: what history keeps.
	Input string
}

// Catalog is what parsing and completion know about the session: the REPL's
// cached tool lists, never a round trip. Implementations must be safe for
// the calls the REPL makes (usually one goroutine); Index is one.
type Catalog interface {
	// Nodes returns the node ids, sorted.
	Nodes() []string
	// Tools returns a node's tools in the node's order; ok is false for an
	// unknown node. A known node whose tools are not known yet (still
	// starting, failed) returns nil, true.
	Tools(node string) (tools []*mcp.Tool, ok bool)
	// Tool finds one tool of a node by its exact name.
	Tool(node, name string) (*mcp.Tool, bool)
}

// Index is a Catalog built from a snapshot of tool lists. Build a new one
// when a node's tools change; an Index is immutable and safe for concurrent
// use.
type Index struct {
	nodes []string
	by    map[string]*nodeIndex
}

type nodeIndex struct {
	tools  []*mcp.Tool
	byName map[string]*mcp.Tool
	sorted []string // tool names, sorted, for prefix search
}

// NewIndex builds an Index. A node mapped to nil is known but has no tools
// listed yet. The tools are not copied and must not be modified afterwards.
func NewIndex(nodes map[string][]*mcp.Tool) *Index {
	ix := &Index{by: make(map[string]*nodeIndex, len(nodes))}
	for id, tools := range nodes {
		ni := &nodeIndex{tools: tools, byName: make(map[string]*mcp.Tool, len(tools)), sorted: make([]string, 0, len(tools))}
		for _, t := range tools {
			if t == nil {
				continue
			}
			if _, dup := ni.byName[t.Name]; !dup {
				ni.sorted = append(ni.sorted, t.Name)
			}
			ni.byName[t.Name] = t
		}
		slices.Sort(ni.sorted)
		ix.by[id] = ni
		ix.nodes = append(ix.nodes, id)
	}
	slices.Sort(ix.nodes)
	return ix
}

func (ix *Index) Nodes() []string { return ix.nodes }

func (ix *Index) Tools(node string) ([]*mcp.Tool, bool) {
	ni, ok := ix.by[node]
	if !ok {
		return nil, false
	}
	return ni.tools, true
}

func (ix *Index) Tool(node, name string) (*mcp.Tool, bool) {
	ni, ok := ix.by[node]
	if !ok {
		return nil, false
	}
	t, ok := ni.byName[name]
	return t, ok
}

// toolNames returns the node's tool names sorted, from the index when the
// catalog is an Index, else by listing and sorting.
func toolNames(cat Catalog, node string) []string {
	if ix, ok := cat.(*Index); ok {
		if ni := ix.by[node]; ni != nil {
			return ni.sorted
		}
		return nil
	}
	tools, _ := cat.Tools(node)
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t != nil {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Refs gives block references (`:::3`, `:::fs[-1]`) their text.
type Refs interface {
	// Block returns the output of block n (numbered from 1).
	Block(n int) (text string, ok bool)
	// NodeBlock returns a node's back-th most recent output (1 = the last).
	NodeBlock(node string, back int) (text string, ok bool)
}

// History is a Refs kept in memory: the REPL adds each result's text as it
// prints it. Not safe for concurrent use.
type History struct {
	blocks []block
}

type block struct {
	node, text string
}

// Add records a result of node and returns its block number. Trailing
// newlines are dropped, as a shell's $(…) drops them.
func (h *History) Add(node, text string) int {
	h.blocks = append(h.blocks, block{node, strings.TrimRight(text, "\r\n")})
	return len(h.blocks)
}

// Len is the number of blocks so far.
func (h *History) Len() int {
	if h == nil {
		return 0
	}
	return len(h.blocks)
}

func (h *History) Block(n int) (string, bool) {
	if h == nil || n < 1 || n > len(h.blocks) {
		return "", false
	}
	return h.blocks[n-1].text, true
}

func (h *History) NodeBlock(node string, back int) (string, bool) {
	if h == nil || back < 1 {
		return "", false
	}
	for i := len(h.blocks) - 1; i >= 0; i-- {
		if h.blocks[i].node == node {
			back--
			if back == 0 {
				return h.blocks[i].text, true
			}
		}
	}
	return "", false
}

// validNodeID reports whether id follows the node id rule of pkg/node
// (^[a-z0-9][a-z0-9_-]{0,62}$) without a regexp, since it runs per keystroke.
func validNodeID(id string) bool {
	if id == "" || len(id) > 63 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

func isNodeIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func nodeList(cat Catalog) string {
	nodes := cat.Nodes()
	if len(nodes) == 0 {
		return "no nodes yet: add one with :node add KIND NAME"
	}
	const max = 12
	if len(nodes) > max {
		return "nodes: " + strings.Join(nodes[:max], ", ") + ", …"
	}
	return "nodes: " + strings.Join(nodes, ", ")
}
