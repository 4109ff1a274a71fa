package commander

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// checkGolden compares got with testdata/name.golden. Escape characters are
// shown as ␛ so coloured goldens read in a diff.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, "\x1b", "␛")
	path := filepath.Join("testdata", name+".golden")
	if *update {
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
		t.Errorf("%s differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func richTool() *mcp.Tool {
	destructive := true
	return &mcp.Tool{
		Name:        "deploy",
		Title:       "Deploy a service",
		Description: "Deploy a service to an environment.\nRolls back on failure unless told otherwise.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &destructive},
		InputSchema: schema(`{
  "type": "object",
  "properties": {
    "service": {"type": "string", "description": "Name of the service."},
    "env": {"type": "string", "enum": ["dev", "staging", "prod"], "default": "dev", "description": "Where to deploy."},
    "replicas": {"type": "integer", "minimum": 1, "maximum": 50, "default": 2},
    "ratio": {"type": "number", "description": "Canary share."},
    "dry_run": {"type": "boolean", "default": false},
    "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels to attach."},
    "limits": {"type": "object", "description": "Resource limits.", "properties": {
        "cpu": {"type": "string", "examples": ["500m"]},
        "memory": {"type": "string", "description": "e.g. 512Mi"}
      }, "required": ["cpu"]},
    "ports": {"type": "array", "items": {"type": "object", "properties": {
        "port": {"type": "integer"}, "protocol": {"type": "string", "enum": ["tcp", "udp"]}
      }, "required": ["port"]}},
    "url": {"type": "string", "format": "uri"},
    "note": {"type": ["string", "null"]}
  },
  "required": ["service", "limits"]
}`),
		OutputSchema: schema(`{"type":"object","properties":{"id":{"type":"string"},"status":{"type":"string"}}}`),
	}
}

func TestRenderToolList(t *testing.T) {
	cat := testCatalog()
	fs, _ := cat.Tools("fs")
	bash, _ := cat.Tools("bash")
	checkGolden(t, "toollist_plain", RenderToolList("fs", fs, NewStyle(false)))
	checkGolden(t, "toollist_color", RenderToolList("fs", fs, NewStyle(true)))
	checkGolden(t, "toollist_single", RenderToolList("bash", bash, nil))
	checkGolden(t, "toollist_empty", RenderToolList("pending", nil, nil))
}

func TestRenderToolHelp(t *testing.T) {
	cat := testCatalog()
	bash, _ := cat.Tool("bash", "bash")
	search, _ := cat.Tool("fs", "search")
	ping, _ := cat.Tool("fs", "ping")
	checkGolden(t, "toolhelp_rich_plain", RenderToolHelp("ops", richTool(), false, nil))
	checkGolden(t, "toolhelp_rich_color", RenderToolHelp("ops", richTool(), false, NewStyle(true)))
	checkGolden(t, "toolhelp_single", RenderToolHelp("bash", bash, true, nil))
	checkGolden(t, "toolhelp_value", RenderToolHelp("fs", search, false, nil))
	checkGolden(t, "toolhelp_noparams", RenderToolHelp("fs", ping, false, nil))

	// Every example line the help prints must parse back to a call of the
	// same tool: help that shows a line that fails is worse than none.
	ops := NewIndex(map[string][]*mcp.Tool{"ops": {richTool(), ping}})
	for _, c := range []struct {
		cat  Catalog
		node string
		tool *mcp.Tool
	}{{ops, "ops", richTool()}, {cat, "bash", bash}, {cat, "fs", search}, {cat, "fs", ping}} {
		tools, _ := c.cat.Tools(c.node)
		for _, ex := range examples(c.node, c.tool, len(tools) == 1) {
			ln, err := Parse(ex, c.cat, nil)
			if err != nil || ln.Kind != Call || ln.Tool != c.tool.Name {
				t.Errorf("example %q does not parse as a call of %s: %+v, %v", ex, c.tool.Name, ln, err)
			}
		}
	}
}

// renderGolden shows everything a Rendered carries.
func renderGolden(r *Rendered) string {
	var b strings.Builder
	b.WriteString("=== text\n" + r.Text)
	fmt.Fprintf(&b, "=== value (%d bytes)\n%s\n", len(r.Value), clip(r.Value, 200))
	fmt.Fprintf(&b, "=== is error: %v, truncated: %v, full: %d bytes\n", r.IsError, r.Truncated, len(r.Full))
	for _, a := range r.Attachments {
		fmt.Fprintf(&b, "=== attachment %s %s %d bytes %s\n", a.Name, a.MIME, len(a.Data), a.Placeholder)
	}
	return b.String()
}

func allContent() *mcp.CallToolResult {
	size := int64(2048)
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "Here is the chart:"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG....")},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF....WAVE")},
		&mcp.ResourceLink{URI: "file:///tmp/report.pdf", Name: "report.pdf", Title: "Quarterly report", MIMEType: "application/pdf", Size: &size},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///tmp/notes.txt", MIMEType: "text/plain", Text: "line one\nline two\n"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///tmp/data.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 3}}},
	}}
}

func structured() *mcp.CallToolResult {
	v := map[string]any{"id": "svc-1", "ok": true, "count": 3, "ratio": 0.5, "tags": []any{"a", "<b>"}, "owner": nil, "nested": map[string]any{"k": "v"}}
	return &mcp.CallToolResult{StructuredContent: v, Content: []mcp.Content{&mcp.TextContent{Text: `{"count":3,"id":"svc-1","nested":{"k":"v"},"ok":true,"owner":null,"ratio":0.5,"tags":["a","<b>"]}`}}}
}

func TestRenderResult(t *testing.T) {
	long := strings.Repeat("0123456789 the quick brown fox jumps over the lazy dog\n", 40)
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		opt  RenderOptions
	}{
		{"result_text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "total 0\ndrwxr-xr-x 2 root root 40 a\n"}}}, RenderOptions{}},
		{"result_text_no_newline", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42"}}}, RenderOptions{Style: NewStyle(true)}},
		{"result_structured_plain", structured(), RenderOptions{}},
		{"result_structured_color", structured(), RenderOptions{Style: NewStyle(true)}},
		{"result_structured_only", &mcp.CallToolResult{StructuredContent: []any{1, "two", false}}, RenderOptions{Style: NewStyle(true)}},
		{"result_text_and_structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Deployed."}}, StructuredContent: map[string]any{"id": "x"}}, RenderOptions{}},
		{"result_all_content_plain", allContent(), RenderOptions{}},
		{"result_all_content_color", allContent(), RenderOptions{Style: NewStyle(true)}},
		{"result_error_plain", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ENOENT: no such file or directory, open '/nope'\nsecond line"}}}, RenderOptions{}},
		{"result_error_color", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ENOENT: no such file or directory, open '/nope'\nsecond line"}}}, RenderOptions{Style: NewStyle(true)}},
		{"result_empty", &mcp.CallToolResult{}, RenderOptions{}},
		{"result_truncated_plain", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: long}}}, RenderOptions{MaxBytes: 300}},
		{"result_truncated_color", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "before\n"}}, StructuredContent: map[string]any{"rows": strings.Split(strings.TrimSpace(long), "\n")}}, RenderOptions{MaxBytes: 400, Style: NewStyle(true)}},
		{"result_truncated_no_newline", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("é", 400)}}}, RenderOptions{MaxBytes: 101}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGolden(t, c.name, renderGolden(RenderResult(c.res, c.opt)))
		})
	}
}

func TestRenderedFill(t *testing.T) {
	r := RenderResult(allContent(), RenderOptions{MaxBytes: 40})
	if !r.Truncated || len(r.Attachments) != 3 {
		t.Fatalf("truncated %v, %d attachments", r.Truncated, len(r.Attachments))
	}
	r.Fill([]string{"/s/image-1.png", "/s/audio-2.wav", "/s/3-data.bin"}, "/s/full.txt")
	for _, want := range []string{"/s/full.txt"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, r.Text)
		}
	}
	for _, want := range []string{"/s/image-1.png", "/s/audio-2.wav", "/s/3-data.bin"} {
		if !strings.Contains(r.Full, want) {
			t.Errorf("full text lacks %q:\n%s", want, r.Full)
		}
	}
	if strings.Contains(r.Text+r.Full, "⟪") {
		t.Errorf("a placeholder is left:\n%s\n%s", r.Text, r.Full)
	}
}

func TestRenderTruncationKeepsUTF8(t *testing.T) {
	r := RenderResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("日本語", 100)}}}, RenderOptions{MaxBytes: 50})
	first, _, _ := strings.Cut(r.Text, "\n")
	if !strings.HasPrefix(strings.Repeat("日本語", 100), first) || len(first) > 50 {
		t.Errorf("cut inside a character or past the limit: %q", first)
	}
	if r.Full != strings.Repeat("日本語", 100)+"\n" {
		t.Errorf("full text is not the whole output")
	}
}

// TestAppendJSONMatchesEncodingJSON checks the fast encoder against
// encoding/json, compact and indented.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, 0.0, -1.5, 1e21, 1e-7, 123456789.0, 3.0, "plain", "quote \" back \\ nl \n tab \t ctl \x01 é 日本",
		[]any{}, map[string]any{}, []any{1.0, "a", nil, []any{map[string]any{"z": 1.0, "a": []any{}}}},
		map[string]any{"b": map[string]any{"y": false, "x": "s"}, "a": []any{1.0, 2.5}, "c": json.RawMessage(`{"r":1}`), "d": []string{"typed", "slice"}},
	}
	for _, v := range values {
		for _, indent := range []string{"", "  "} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", indent)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSuffix(buf.String(), "\n")
			if got := string(appendJSON(nil, v, indent, 0)); got != want {
				t.Errorf("appendJSON(%#v, %q):\n%s\nwant\n%s", v, indent, got, want)
			}
			if indent != "" {
				if got := string(indentJSON(nil, appendJSON(nil, v, "", 0))); got != want {
					t.Errorf("indentJSON(%#v):\n%s\nwant\n%s", v, got, want)
				}
			}
		}
	}
}

// TestRenderMirroredStructured checks text that mirrors structured content,
// as a Go server (HTML-escaped) or a Python server (keys in insertion
// order) writes it, is shown once.
func TestRenderMirroredStructured(t *testing.T) {
	v := map[string]any{"z": "<a&b>", "a": 1.0}
	for _, text := range []string{`{"a":1,"z":"\u003ca\u0026b\u003e"}`, `{"z": "<a&b>", "a": 1}`} {
		r := RenderResult(&mcp.CallToolResult{StructuredContent: v, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, RenderOptions{})
		if want := "{\n  \"a\": 1,\n  \"z\": \"<a&b>\"\n}\n"; r.Text != want {
			t.Errorf("text %s rendered as\n%s\nwant\n%s", text, r.Text, want)
		}
	}
}

func TestExtensionPerMIMEType(t *testing.T) {
	for typ, want := range map[string]string{
		"text/plain":                ".txt", // the system's table says .asc
		"text/plain; charset=utf-8": ".txt",
		"application/json":          ".json",
		"text/markdown":             ".md",
		"text/html":                 ".html",
		"text/csv":                  ".csv",
		"image/png":                 ".png",
		"image/jpeg":                ".jpg",
		"audio/wav":                 ".wav",
		"application/pdf":           ".pdf",
		"application/x-nerve-never": ".bin",
	} {
		if got := Extension(typ); got != want {
			t.Errorf("Extension(%q) = %q, want %q", typ, got, want)
		}
	}
}
