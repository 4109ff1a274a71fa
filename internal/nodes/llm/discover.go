package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/node"
)

// The two tools of discovery mode (Options.Discover): the names nerve's
// MCP server uses for the same job (`nerve mcp serve --discover`).
const (
	discoverSearch = "search_tools"
	discoverCall   = "call_tool"
)

// searchLimit is how many tools one search returns at most.
const searchLimit = 20

var discoveryTools = []provider.Tool{
	{
		Name: discoverSearch,
		Description: "Find the tools you may use by what they do. Give a query in words (\"read a text file\"); the best " +
			"matches come back with their name, description and parameters. Call one with call_tool.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "what the tool should do, in words"},
			"limit": map[string]any{"type": "integer", "description": "how many tools to return (default 5, at most 20)"},
		}, "required": []any{"query"}},
	},
	{
		Name: discoverCall,
		Description: "Call a tool found with search_tools by its name, with its arguments as an object matching its " +
			"parameters. The answer is the tool's result.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"name":      map[string]any{"type": "string", "description": "the tool's name as search_tools gave it"},
			"arguments": map[string]any{"type": "object", "description": "the tool's arguments"},
		}, "required": []any{"name"}},
	},
}

// discoveryCache indexes the tools patterns choose from ts (never the
// node's own) and offers the two discovery tools instead of them.
func discoveryCache(ts *node.Toolset, self string, patterns []string) toolCache {
	c := toolCache{ts: ts, tools: discoveryTools, byLLM: map[string]node.ToolEntry{}, byName: map[string]node.ToolEntry{}}
	var docs []toolsearch.Doc
	for _, e := range ts.Tools() {
		if e.Node == self || !selected(patterns, e) {
			continue
		}
		c.byName[e.Qualified] = e
		c.byName[e.LLMName] = e
		docs = append(docs, toolsearch.Doc{Name: e.Qualified, Node: e.Node, Tool: e.Tool})
	}
	c.index = toolsearch.New(docs)
	for _, t := range c.tools {
		b, _ := json.Marshal(t.Parameters)
		c.bytes += len(b) + len(t.Name) + len(t.Description) + 32
	}
	return c
}

// search answers search_tools: the best matches as JSON, each with its
// name, description and (cleaned) parameters.
func (c toolCache) search(args json.RawMessage) (string, bool) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Query) == "" {
		return `Error: search_tools needs a query in words, e.g. {"query": "read a text file"}`, true
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 5
	}
	type found struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
	out := []found{}
	for _, h := range c.index.Search(in.Query, min(limit, searchLimit)) {
		desc := h.Tool.Description
		if desc == "" {
			desc = h.Tool.Title
		}
		out = append(out, found{Name: h.Name, Description: desc, Parameters: CleanSchema(h.Tool.InputSchema)})
	}
	if len(out) == 0 {
		return fmt.Sprintf("no tool matches %q: try other words for what it should do", in.Query), false
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "Error: " + err.Error(), true
	}
	return string(b), false
}

// unknown is what the model reads for a name call_tool does not know.
func (c toolCache) unknown(name string) string {
	msg := fmt.Sprintf("Error: there is no tool %q; find tools with search_tools and use the name it gives", name)
	var like []string
	for _, h := range c.index.Search(name, 3) {
		like = append(like, h.Name)
	}
	if len(like) > 0 {
		msg += " (close: " + strings.Join(like, ", ") + ")"
	}
	return msg
}
