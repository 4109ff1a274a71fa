package node

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or writes it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("ResultText mismatch for %s (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func size(n int64) *int64 { return &n }

func TestResultText(t *testing.T) {
	png := bytes.Repeat([]byte{0x89}, 34*1024)
	tests := []struct {
		name     string
		res      *mcp.CallToolResult
		maxBytes int
	}{
		{name: "nil", res: nil},
		{name: "empty", res: &mcp.CallToolResult{}},
		{name: "text", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "hello"}, &mcp.TextContent{Text: "second block\nwith two lines"},
		}}},
		{name: "image_audio", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Here is the chart:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: png},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 1258291)},
			&mcp.ImageContent{Data: []byte("tiny")},
		}}},
		{name: "resource_link", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ResourceLink{Name: "report.pdf", URI: "file:///tmp/report.pdf", MIMEType: "application/pdf", Size: size(2048)},
			&mcp.ResourceLink{URI: "https://example.com/x", Description: "the x page"},
		}}},
		{name: "embedded", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///etc/hostname", MIMEType: "text/plain", Text: "box\n"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///bin/true", MIMEType: "application/octet-stream", Blob: make([]byte, 2048)}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://blob", Blob: []byte{1, 2, 3}}},
		}}},
		{name: "structured_only", res: &mcp.CallToolResult{
			StructuredContent: map[string]any{"temperature": 21.5, "unit": "C", "tags": []string{"a", "b"}},
		}},
		{name: "structured_raw_with_image", res: &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.ImageContent{MIMEType: "image/jpeg", Data: make([]byte, 500)}},
			StructuredContent: json.RawMessage("{\n  \"ok\": true\n}"),
		}},
		{name: "structured_with_text", res: &mcp.CallToolResult{
			// The text already says it: structured content is not repeated.
			Content:           []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}},
			StructuredContent: map[string]any{"ok": true},
		}},
		{name: "error", res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
			&mcp.TextContent{Text: "ENOENT: no such file or directory, open '/tmp/nope'"},
		}}},
		{name: "error_empty", res: &mcp.CallToolResult{IsError: true}},
		{name: "other_content", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ToolUseContent{ID: "1", Name: "x"}, nil,
		}}},
		{name: "truncated", maxBytes: 64, res: &mcp.CallToolResult{Content: []mcp.Content{
			// 'é' is two bytes: byte 64 falls inside one.
			&mcp.TextContent{Text: "a" + strings.Repeat("é", 2000)},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResultText(tt.res, tt.maxBytes)
			if !utf8.ValidString(got) {
				t.Errorf("ResultText is not valid UTF-8: %q", got)
			}
			golden(t, "result/"+tt.name+".txt", got)
		})
	}
}

func TestResultTextTruncation(t *testing.T) {
	big := strings.Repeat("0123456789", 150_000) // 1.5 MB
	tests := []struct {
		name       string
		text       string
		maxBytes   int
		wantKept   int
		wantNotice string
	}{
		{"default limit", big, 0, DefaultResultBytes, "\n[... truncated: 1.4 MB total, showing first 100 KB]"},
		{"fits", "short", 5, 5, ""},
		{"one over", "short!", 5, 5, "\n[... truncated: 6 B total, showing first 5 B]"},
		// "日" is 3 bytes: a 4-byte limit keeps one character, not 1⅓.
		{"utf8 boundary", "日本", 4, 3, "\n[... truncated: 6 B total, showing first 3 B]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResultText(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tt.text}}}, tt.maxBytes)
			kept, notice := got, ""
			if i := strings.Index(got, "\n[... truncated"); i >= 0 {
				kept, notice = got[:i], got[i:]
			}
			if len(kept) != tt.wantKept || kept != tt.text[:tt.wantKept] {
				t.Errorf("kept %d bytes, want the first %d", len(kept), tt.wantKept)
			}
			if notice != tt.wantNotice {
				t.Errorf("notice %q, want %q", notice, tt.wantNotice)
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1 KB"}, {2048, "2 KB"}, {34 * 1024, "34 KB"},
		{1536, "1.5 KB"}, {1258291, "1.2 MB"}, {100 << 10, "100 KB"}, {3 << 30, "3 GB"},
	}
	for _, tt := range tests {
		if got := HumanBytes(tt.n); got != tt.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
