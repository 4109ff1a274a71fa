package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestCodeMode: with Code the model is offered run_script alone, whose
// description lists the tools the node may call (not the others); it
// answers with a run_script call whose script calls two tools; both calls
// are made, as the agent's script, and the model reads the script's
// result — not the tools' results — in its next request (issue 30).
func TestCodeMode(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	box := boxSpec{
		id: "notes",
		tools: []*mcp.Tool{
			{Name: "list", Description: "List the notes.", InputSchema: objectSchema(nil)},
			{Name: "read", Description: "Read one note.", InputSchema: objectSchema(map[string]any{"name": map[string]any{"type": "string"}}, "name")},
		},
		call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			c, _ := node.CallerFrom(ctx)
			mu.Lock()
			calls = append(calls, tool+" by "+c.String())
			mu.Unlock()
			if tool == "list" {
				return textResult("a.txt\nb.txt"), nil
			}
			var a struct{ Name string }
			_ = json.Unmarshal(args, &a)
			return textResult(strings.Repeat("word ", len(a.Name))), nil
		},
	}
	hidden := boxSpec{id: "secret", tools: []*mcp.Tool{{Name: "steal", InputSchema: objectSchema(nil)}},
		call: func(context.Context, string, json.RawMessage) (*mcp.CallToolResult, error) {
			return textResult("stolen"), nil
		}}
	script := `names = notes.list().splitlines()
first = notes.read(name=names[0])
result = {"notes": len(names), "words": len(first.split())}`
	args, _ := json.Marshal(map[string]string{"script": script})
	srv := llmserver.Start(
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				if got := r.ToolNames(); !slices.Equal(got, []string{"run_script"}) {
					return fmt.Errorf("tools offered %v, want run_script alone", got)
				}
				rs, _ := r.Tool("run_script")
				if d := rs.Function.Description; !strings.Contains(d, "notes.read(name: str) -> str") || strings.Contains(d, "secret") {
					return fmt.Errorf("run_script's description should list notes' tools and not secret's:\n%s", d)
				}
				return nil
			},
			ToolCalls: []llmserver.ToolCall{{Name: "run_script", Arguments: string(args)}},
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				if got, _ := r.ToolResult("call_1_0"); got != `{"notes":2,"words":5}` {
					return fmt.Errorf("the model read %q from run_script, want the script's result", got)
				}
				return nil
			},
			Text: "2 notes; the first has 5 words",
		},
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "run_script", Arguments: `{"script": "secret.steal()"}`}}},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				if got, _ := r.ToolResult("call_3_0"); !strings.Contains(got, "no builtin and no node visible to this script is called secret") {
					return fmt.Errorf("a script calling a tool the node may not call: the model read %q", got)
				}
				return nil
			},
			Text: "cannot",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"notes"}, Code: true}, box, hidden)
	rec := &recorder{}
	res, err := h.chat(context.Background(), "how many notes, and how long is the first?", rec)
	if err != nil || resultText(t, res) != "2 notes; the first has 5 words" {
		t.Fatalf("chat: %v %+v", err, res)
	}
	if _, err := h.chat(context.Background(), "steal", nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "list by script:llm:agent/1:") || !strings.HasPrefix(calls[1], "read by script:llm:agent/2:") {
		t.Errorf("the tools saw %q, want list and read by the agent's script", calls)
	}
	if d := rec.stepData(llm.StepToolResult); len(d) != 1 || d[0]["tool"] != "run_script" || d[0]["is_error"] != false {
		t.Errorf("tool_result events %v", d)
	}
}

// TestCodeNeedsTools: --code without --tools is refused, saying what to add.
func TestCodeNeedsTools(t *testing.T) {
	raw, _ := json.Marshal(llm.Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Code: true})
	if _, err := llm.New(node.Spec{ID: "a", Kind: llm.Kind, Options: raw}, node.Env{}); err == nil || !strings.Contains(err.Error(), "add --tools") {
		t.Errorf("--code without --tools: %v", err)
	}
}
