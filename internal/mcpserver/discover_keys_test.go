package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// TestDiscoverSchemaKey: search_tools and describe_tool name a tool's
// input schema alike, with MCP's own name, inputSchema; search_tools said
// input_schema (issue 27 item 6).
func TestDiscoverSchemaKey(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	cs, _ := connect(t, serve(t, NewSessionBackend(s), &Options{Discover: true}), nil)
	keys := func(name string, args map[string]any, pick func(map[string]json.RawMessage) map[string]json.RawMessage) map[string]json.RawMessage {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", name, err, mustJSON(res))
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(resultText(res)), &m); err != nil {
			t.Fatalf("%s answered %q: %v", name, resultText(res), err)
		}
		return pick(m)
	}
	found := keys(ToolSearch, map[string]any{"query": "echo text"}, func(m map[string]json.RawMessage) map[string]json.RawMessage {
		var tools []map[string]json.RawMessage
		if json.Unmarshal(m["tools"], &tools) != nil || len(tools) == 0 {
			t.Fatalf("search_tools found nothing: %s", m["tools"])
		}
		return tools[0]
	})
	described := keys(ToolDescribe, map[string]any{"name": "echo.identity"}, func(m map[string]json.RawMessage) map[string]json.RawMessage { return m })
	for what, m := range map[string]map[string]json.RawMessage{"search_tools": found, "describe_tool": described} {
		if _, ok := m["inputSchema"]; !ok {
			t.Errorf("%s gives no inputSchema: keys %v", what, keysOf(m))
		}
		if _, ok := m["input_schema"]; ok {
			t.Errorf("%s says input_schema", what)
		}
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
