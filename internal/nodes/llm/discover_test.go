package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
)

// TestDiscover: with Options.Discover the model is offered search_tools
// and call_tool instead of the tools; it finds fs.read_file by words,
// calls it through call_tool, and a tool --tools does not choose is
// neither found nor callable (issue 19, item 2).
func TestDiscover(t *testing.T) {
	box := boxSpec{
		id: "fs",
		tools: []*mcp.Tool{
			{Name: "read_file", Description: "Read the contents of a file.", InputSchema: objectSchema(map[string]any{"path": map[string]any{"type": "string"}}, "path")},
			{Name: "write_file", Description: "Write contents to a file.", InputSchema: objectSchema(map[string]any{"path": map[string]any{"type": "string"}}, "path")},
		},
		call: func(_ context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			var a struct{ Path string }
			_ = json.Unmarshal(args, &a)
			return textResult(tool + " of " + a.Path), nil
		},
	}
	srv := llmserver.Start(
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				got := r.ToolNames()
				slices.Sort(got)
				if !slices.Equal(got, []string{"call_tool", "search_tools"}) {
					return fmt.Errorf("tools offered %v, want only call_tool and search_tools", got)
				}
				return nil
			},
			ToolCalls: []llmserver.ToolCall{{Name: "search_tools", Arguments: `{"query":"read the contents of a file"}`}},
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				got, _ := r.ToolResult("call_1_0")
				if !strings.Contains(got, `"name":"fs.read_file"`) || !strings.Contains(got, `"path"`) || strings.Contains(got, "write_file") {
					return fmt.Errorf("search_tools answered %q, want fs.read_file with its parameters and not the hidden write_file", got)
				}
				return nil
			},
			ToolCalls: []llmserver.ToolCall{
				{Name: "call_tool", Arguments: `{"name":"fs.read_file","arguments":{"path":"/etc/hostname"}}`},
				{Name: "call_tool", Arguments: `{"name":"fs.write_file","arguments":{"path":"/tmp/x"}}`},
				{Name: "call_tool", Arguments: `{"name":"fs.read_file","arguments":{}}`},
			},
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				for id, want := range map[string]string{
					"call_2_0": "read_file of /etc/hostname",
					"call_2_1": `no tool "fs.write_file"`,
					"call_2_2": "path",
				} {
					if got, _ := r.ToolResult(id); !strings.Contains(got, want) {
						return fmt.Errorf("result %s = %q, want %q", id, got, want)
					}
				}
				return nil
			},
			Text: "done",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"fs.read_*", "echo"}, Discover: true}, box)
	res, err := h.chat(context.Background(), "read /etc/hostname", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if resultText(t, res) != "done" {
		t.Errorf("result %q", resultText(t, res))
	}
}

// TestDiscoverNearest: search_tools in an llm node ranks with the
// session's index and never answers empty while the node may use tools:
// a query no tool matches gets the nearest, after a line saying so.
func TestDiscoverNearest(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "search_tools", Arguments: `{"query":"zxqv"}`}}},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				got, _ := r.ToolResult("call_1_0")
				if !strings.HasPrefix(got, `no tool matches "zxqv"`) || !strings.Contains(got, `"name":"echo.identity"`) {
					return fmt.Errorf("search_tools answered %q, want echo.identity as the nearest, said so", got)
				}
				return nil
			},
			Text: "done",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"echo"}, Discover: true})
	if _, err := h.chat(context.Background(), "find something", nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
