package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/toolsearch"
)

// The meta-tools of discovery mode (Options.Discover, issue 19): a client
// sees these instead of every tool — the MCP specification's progressive
// discovery. Their names have no dot and no "__", so they never meet a
// node's tool in session mode.
const (
	ToolSearch   = "search_tools"
	ToolDescribe = "describe_tool"
	ToolCall     = "call_tool"
)

// searchDefault and searchMax bound how many tools one search returns.
const (
	searchDefault = 5
	searchMax     = 20
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

var (
	searchTool = &mcp.Tool{
		Name:  ToolSearch,
		Title: "Search the session's tools",
		Description: "Find the tools of this nerve session by what they do. Give a query in words " +
			`("read a text file", "create a github issue"); the best matches come back, each with its name, ` +
			"description and input schema. Call one with call_tool. No match, or none that fits: search again with other words.",
		InputSchema: schema(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what the tool should do, in words"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"how many tools to return (default 5)"}},` +
			`"required":["query"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
	describeTool = &mcp.Tool{
		Name:        ToolDescribe,
		Title:       "Describe one tool",
		Description: "The whole definition of one tool found with search_tools: name, description, input and output schema, annotations.",
		InputSchema: schema(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"the tool's name as search_tools gave it, e.g. fs.read_text_file"}},` +
			`"required":["name"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
	callTool = &mcp.Tool{
		Name:  ToolCall,
		Title: "Call a tool found with search_tools",
		Description: "Call a tool of this nerve session by its name (as search_tools gave it), with its arguments as an " +
			"object that matches the tool's input schema. The answer is the tool's own result; a tool stopped to save " +
			"resources starts on its first call.",
		InputSchema: schema(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"the tool's name, e.g. fs.read_text_file"},` +
			`"arguments":{"type":"object","description":"the tool's arguments, as its input schema says"}},` +
			`"required":["name"],"additionalProperties":false}`),
	}
)

// discoveryTools returns the meta-tools to serve instead of the tools
// themselves, less those a filter hides by name.
func (s *Server) discoveryTools(exp Exposure) map[string]wantTool {
	want := map[string]wantTool{}
	for _, m := range []struct {
		t *mcp.Tool
		h mcp.ToolHandler
	}{
		{searchTool, s.searchTools},
		{describeTool, s.describeTool},
		{callTool, s.callTool},
	} {
		if !exp.hidesName(m.t.Name) {
			want[m.t.Name] = wantTool{tool: m.t, handler: m.h}
		}
	}
	return want
}

// setCatalog makes cat what discovery searches and calls. On a session
// the search is the session's one index (Searcher); on another backend
// the server's own, built again on the next search when the tools
// changed.
func (s *Server) setCatalog(cat map[string]wantTool) {
	served := make(map[toolKey]string, len(cat))
	for name, w := range cat {
		served[toolKey{w.node, w.tool.Name}] = name
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	s.served = served
	same := len(cat) == len(s.catalog)
	for name, w := range cat {
		if !same {
			break
		}
		cur, ok := s.catalog[name]
		same = ok && cur.node == w.node && cur.tool == w.tool
	}
	s.catalog = cat
	if !same {
		s.index = nil
	}
}

// lookup returns the tool served as name in discovery mode.
func (s *Server) lookup(name string) (wantTool, bool) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	w, ok := s.catalog[name]
	return w, ok
}

// toolKey is a tool by node and the node's own name for it.
type toolKey struct{ node, tool string }

// Searcher is a backend that ranks with its session's one tool index
// (pkg/session's SearchTools), so search_tools finds what `nerve tools
// --search`, the llm node's discovery and the Commander find, and learns
// from the session's calls.
type Searcher interface {
	SearchTools(ctx context.Context, query string, o *toolsearch.Options) toolsearch.Result
}

// SearchTools ranks the session's tools (Searcher).
func (b *SessionBackend) SearchTools(ctx context.Context, query string, o *toolsearch.Options) toolsearch.Result {
	return b.s.SearchTools(ctx, query, o)
}

// hit is one tool search_tools found, under the name it is served as.
type hit struct {
	name, node string
	tool       *mcp.Tool
}

// find ranks the served tools for query: with the session's index when
// the backend has one (the served names through the exposure), else with
// the server's own.
func (s *Server) find(ctx context.Context, query string, limit int) ([]hit, toolsearch.Result) {
	var r toolsearch.Result
	sr, ok := s.b.(Searcher)
	if !ok {
		r = s.searchIndex().Find(ctx, query, &toolsearch.Options{Limit: limit})
		out := make([]hit, len(r.Hits))
		for i, h := range r.Hits {
			out[i] = hit{h.Name, h.Node, h.Tool}
		}
		return out, r
	}
	s.catMu.Lock()
	served := s.served
	s.catMu.Unlock()
	r = sr.SearchTools(ctx, query, &toolsearch.Options{Limit: limit, Allow: func(d *toolsearch.Doc) bool {
		_, ok := served[toolKey{d.Node, d.Tool.Name}]
		return ok
	}})
	out := make([]hit, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = hit{served[toolKey{h.Node, h.Tool.Name}], h.Node, h.Tool}
	}
	return out, r
}

// searchIndex returns the server's own index of the catalogue, building
// it if needed (a backend that is not a Searcher).
func (s *Server) searchIndex() *toolsearch.Index {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.index == nil {
		docs := make([]toolsearch.Doc, 0, len(s.catalog))
		for name, w := range s.catalog {
			docs = append(docs, toolsearch.Doc{Name: name, Node: w.node, Tool: w.tool})
		}
		s.index = toolsearch.New(docs)
	}
	return s.index
}

// found is one tool as search_tools shows it.
type found struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"` // MCP's name, as describe_tool gives it
	// State is set for a tool whose node does not take calls at once:
	// its state and what a call does (waits, starts it) or what starts it.
	State string `json:"state,omitempty"`
}

type searchResult struct {
	Tools []found `json:"tools"`
	// Of is how many tools the search went through.
	Of int `json:"of"`
	// Nearest: no tool matched the query's words; Tools are the
	// nearest (toolsearch.Result.Nearest).
	Nearest bool   `json:"nearest,omitempty"`
	Note    string `json:"note,omitempty"`
}

// metaArgs decodes a meta-tool's arguments (the SDK checked them against
// its input schema).
func metaArgs(req *mcp.CallToolRequest, v any) error {
	if req.Params == nil || len(req.Params.Arguments) == 0 {
		return nil
	}
	return json.Unmarshal(req.Params.Arguments, v)
}

// toolError is a meta-tool's failure as the model reads it.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// jsonResult is v as both text (for models) and structured content.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// readiness is what a call to node id meets now, for a model: "" when it
// runs at once, else its state and what happens or what starts it.
func (s *Server) readiness(ctx context.Context, id string) string {
	r, err := s.b.Readiness(ctx, id)
	if err != nil {
		return ""
	}
	return r
}

func (s *Server) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.last.Store(req.Session)
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := metaArgs(req, &in); err != nil {
		return toolError("search_tools: %v: give {\"query\": \"what the tool should do\"}", err), nil
	}
	if strings.TrimSpace(in.Query) == "" {
		return toolError(`search_tools needs a query in words, e.g. {"query": "read a text file"}`), nil
	}
	limit := in.Limit
	if limit <= 0 {
		limit = searchDefault
	}
	limit = min(limit, searchMax)
	hits, r := s.find(ctx, in.Query, limit)
	out := searchResult{Tools: []found{}, Of: r.Of, Nearest: r.Nearest}
	for _, h := range hits {
		out.Tools = append(out.Tools, found{Name: h.name, Description: h.tool.Description, InputSchema: objectSchema(h.tool.InputSchema), State: s.readiness(ctx, h.node)})
	}
	switch {
	case r.Of == 0:
		out.Note = "this session serves no tools yet: add a node (`nerve node add`), or check `nerve session set expose`"
	case r.Nearest:
		out.Note = r.Describe(in.Query)
	}
	return jsonResult(out)
}

// unknown is the answer for a name discovery does not serve, hidden or
// not: the same words either way, so a filter does not leak what it hides.
func (s *Server) unknown(ctx context.Context, name string) *mcp.CallToolResult {
	msg := fmt.Sprintf("no tool %q here: find tools with search_tools and use the name it gives", name)
	var like []string
	hits, _ := s.find(ctx, name, 3)
	for _, h := range hits {
		like = append(like, h.name)
	}
	if len(like) > 0 {
		msg += " (close: " + strings.Join(like, ", ") + ")"
	}
	return toolError("%s", msg)
}

func (s *Server) describeTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.last.Store(req.Session)
	var in struct {
		Name string `json:"name"`
	}
	if err := metaArgs(req, &in); err != nil {
		return toolError("describe_tool: %v: give {\"name\": \"node.tool\"}", err), nil
	}
	w, ok := s.lookup(in.Name)
	if !ok {
		return s.unknown(ctx, in.Name), nil
	}
	t := *w.tool
	t.Name = in.Name
	t.InputSchema = objectSchema(t.InputSchema)
	return jsonResult(described{Tool: &t, State: s.readiness(ctx, w.node)})
}

// described is a tool as describe_tool shows it: its definition and, for
// a node that does not take calls at once, what a call meets (found.State).
type described struct {
	*mcp.Tool
	State string `json:"state,omitempty"`
}

// callTool calls the tool named in its arguments exactly as a direct
// tools/call of that tool would: the session validates the arguments,
// progress and log messages reach this request's client, and cancelling
// this request cancels the call.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.last.Store(req.Session)
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := metaArgs(req, &in); err != nil {
		return toolError("call_tool: %v: give {\"name\": \"node.tool\", \"arguments\": {…}}", err), nil
	}
	w, ok := s.lookup(in.Name)
	if !ok {
		return s.unknown(ctx, in.Name), nil
	}
	args := in.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	sub := &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra, Params: &mcp.CallToolParamsRaw{Name: in.Name, Arguments: args}}
	if req.Params != nil {
		sub.Params.Meta = req.Params.Meta
	}
	return s.toolHandler(w.node, w.tool)(ctx, sub)
}
