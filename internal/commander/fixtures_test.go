package commander

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// schema decodes a JSON schema the way a client receives it.
func schema(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func tool(name, desc, inputSchema string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: desc, InputSchema: schema(inputSchema)}
}

var configSchema = `{
  "type": "object",
  "properties": {
    "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast", "description": "How hard to try."},
    "verbose": {"type": "boolean", "description": "Say more."},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
    "count": {"type": "integer", "description": "How many."},
    "tags": {"type": "array", "items": {"type": "string"}},
    "ids": {"type": "array", "items": {"type": "integer"}},
    "opts": {"type": "object", "properties": {"depth": {"type": "integer", "default": 1}, "follow": {"type": "boolean"}}, "required": ["follow"]},
    "note": {"type": ["string", "null"]},
    "level": {"$ref": "#/$defs/level"},
    "anything": {}
  },
  "$defs": {"level": {"type": "integer", "enum": [1, 2, 3]}},
  "additionalProperties": false
}`

// testCatalog is a session with a multi-tool MCP node, single-tool nodes and
// a node whose tools are not listed yet.
func testCatalog() *Index {
	return NewIndex(map[string][]*mcp.Tool{
		"fs": {
			tool("read_file", "Read the complete contents of a file.\nSecond line.", `{"type":"object","properties":{"path":{"type":"string","description":"File to read."},"tail":{"type":"integer"},"head":{"type":"integer"}},"required":["path"]}`),
			tool("write_file", "Create or overwrite a file.", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
			tool("list_directory", "List a directory.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			tool("search", "Search files for text.", `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`),
			tool("files.read", "A tool whose MCP name has a dot.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			tool("config", "Set options.", configSchema),
			tool("ping", "No arguments.", `{"type":"object"}`),
		},
		"bash":     {tool("bash", "Run a command in a persistent bash shell.", `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}`)},
		"graph":    {tool("run", "Run the graph.", `{"type":"object","properties":{"inputs":{"type":"object"}},"required":["inputs"]}`)},
		"echo":     {tool("identity", "Echo text.", `{"type":"object","properties":{"text":{"type":"string"}}}`)},
		"pending":  nil,
		"fs-cache": {tool("get", "", `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`)},
	})
}

func testHistory() *History {
	h := &History{}
	h.Add("fs", "hello")
	h.Add("bash", "line \"two\"\n")
	h.Add("fs", "42")
	return h
}
