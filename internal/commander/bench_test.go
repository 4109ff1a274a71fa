package commander

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchLines is a mix of what people type: calls in each form, help,
// commands, a block reference.
var benchLines = []string{
	`@fs read_file {"path": "/tmp/a.txt", "head": 10}`,
	`@fs read_file path=/tmp/a.txt tail=5`,
	`@bash ls -la /srv`,
	`@fs ?`,
	`@fs write_file path="/tmp/a b" content='hello world'`,
	`@fs config mode=slow verbose=true ids=[1,2,3] tags=a,b`,
	`:node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp`,
	`@echo :::1 and :::fs[-1]`,
	`@fs search hello world`,
	`@fs.files.read {"path":"/a"}`,
}

func BenchmarkParse(b *testing.B) {
	cat, h := testCatalog(), testHistory()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Parse(benchLines[i%len(benchLines)], cat, h); err != nil {
			b.Fatal(err)
		}
	}
}

func bigCatalog(n int) *Index {
	tools := make([]*mcp.Tool, n)
	for i := range tools {
		tools[i] = tool(fmt.Sprintf("tool_%05d_%s", i, []string{"read", "write", "list", "search"}[i%4]), "A tool.",
			`{"type":"object","properties":{"path":{"type":"string"},"mode":{"type":"string","enum":["a","b"]}},"required":["path"]}`)
	}
	return NewIndex(map[string][]*mcp.Tool{"big": tools, "fs": tools[:3]})
}

// BenchmarkComplete10kTools presses Tab after "@big " (every tool is a
// candidate), after "@big tool_04" (a thousand are), and after a tool name
// (its keys) on a node with 10,000 tools.
func BenchmarkComplete10kTools(b *testing.B) {
	cat := bigCatalog(10000)
	for _, line := range []string{"@big ", "@big tool_04", "@big tool_09999_search ", "@b"} {
		b.Run(strings.TrimSpace(line), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, _ := Complete(line, len(line), cat, testCommands)
				if len(c) == 0 {
					b.Fatal("no candidates")
				}
			}
		})
	}
}

// BenchmarkParse10kTools parses a call on the node with 10,000 tools.
func BenchmarkParse10kTools(b *testing.B) {
	cat := bigCatalog(10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("@big tool_09999_search path=/a mode=b", cat, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderResult1MB renders a 1 MB text result and a 1 MB structured
// result, coloured, with the default limit.
func BenchmarkRenderResult1MB(b *testing.B) {
	line := strings.Repeat("x", 99) + "\n"
	text := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat(line, 10<<10)}}}
	rows := make([]any, 0, 10<<10)
	for i := 0; i < 14<<10; i++ {
		rows = append(rows, map[string]any{"id": i, "name": "row name " + fmt.Sprint(i), "ok": i%2 == 0, "score": 0.5, "tags": []any{"a", "b"}})
	}
	structured := &mcp.CallToolResult{StructuredContent: map[string]any{"rows": rows}}
	// What a Go server sends: the structured output and its JSON as text.
	mirrorText, _ := json.Marshal(structured.StructuredContent)
	mirrored := &mcp.CallToolResult{StructuredContent: structured.StructuredContent, Content: []mcp.Content{&mcp.TextContent{Text: string(mirrorText)}}}
	for _, c := range []struct {
		name string
		res  *mcp.CallToolResult
		opt  RenderOptions
	}{
		{"text", text, RenderOptions{Style: NewStyle(true)}},
		{"structured", structured, RenderOptions{Style: NewStyle(true)}},
		{"structured-nolimit", structured, RenderOptions{Style: NewStyle(true), MaxBytes: -1}},
		{"structured-mirrored", mirrored, RenderOptions{Style: NewStyle(true)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := RenderResult(c.res, c.opt); r.Text == "" {
					b.Fatal("empty")
				}
			}
		})
	}
	b.Logf("structured result: %d bytes of JSON", len(marshalNoEscape(nil, structured.StructuredContent)))
}
