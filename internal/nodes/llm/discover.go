package llm

import (
	"context"
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

// searcher is a session that ranks its tools with its one index
// (pkg/session's SearchTools): the same ranking as search_tools of
// `nerve mcp serve --discover`, `nerve tools --search` and the
// Commander's @?, and the session's usage.
type searcher interface {
	SearchTools(ctx context.Context, query string, o *toolsearch.Options) toolsearch.Result
}

// discoveryCache offers the two discovery tools instead of the tools
// patterns choose from ts (never the node's own), and searches them with
// the session's index, or, on a session that has none, with its own.
func discoveryCache(ts *node.Toolset, tc node.ToolCaller, self string, patterns []string) toolCache {
	c := toolCache{ts: ts, tools: discoveryTools, byLLM: map[string]node.ToolEntry{}, byName: map[string]node.ToolEntry{}, discover: true}
	var docs []toolsearch.Doc
	for _, e := range ts.Tools() {
		if e.Node == self || !selected(patterns, e) {
			continue
		}
		c.byName[e.Qualified] = e
		c.byName[e.LLMName] = e
		docs = append(docs, toolsearch.Doc{Name: e.Qualified, Node: e.Node, Tool: e.Tool})
	}
	if s, ok := tc.(searcher); ok {
		c.searcher = s
	} else {
		c.index = toolsearch.New(docs)
	}
	for _, t := range c.tools {
		b, _ := json.Marshal(t.Parameters)
		c.bytes += len(b) + len(t.Name) + len(t.Description) + 32
	}
	return c
}

// find ranks the chosen tools for query.
func (c toolCache) find(ctx context.Context, query string, limit int) toolsearch.Result {
	o := &toolsearch.Options{Limit: limit}
	if c.searcher == nil {
		return c.index.Find(ctx, query, o)
	}
	o.Allow = func(d *toolsearch.Doc) bool {
		_, ok := c.byName[d.Name]
		return ok
	}
	return c.searcher.SearchTools(ctx, query, o)
}

// search answers search_tools: the best matches as JSON, each with its
// name, description and (cleaned) parameters; when no tool matches the
// words, the nearest, after a line that says so.
func (c toolCache) search(ctx context.Context, args json.RawMessage) (string, bool) {
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
	r := c.find(ctx, in.Query, min(limit, searchLimit))
	for _, h := range r.Hits {
		desc := h.Tool.Description
		if desc == "" {
			desc = h.Tool.Title
		}
		out = append(out, found{Name: h.Name, Description: desc, Parameters: CleanSchema(h.Tool.InputSchema)})
	}
	if len(out) == 0 {
		return "no tools are available to you", false
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "Error: " + err.Error(), true
	}
	if r.Nearest {
		return r.Describe(in.Query) + ":\n" + string(b), false
	}
	return string(b), false
}

// unknown is what the model reads for a name call_tool does not know.
func (c toolCache) unknown(ctx context.Context, name string) string {
	msg := fmt.Sprintf("Error: there is no tool %q; find tools with search_tools and use the name it gives", name)
	var like []string
	for _, h := range c.find(ctx, name, 3).Hits {
		like = append(like, h.Name)
	}
	if len(like) > 0 {
		msg += " (close: " + strings.Join(like, ", ") + ")"
	}
	return msg
}
