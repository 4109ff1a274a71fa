package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestToolCallsNameTheAgent: the tools an llm node calls see it as their
// caller (node.CallerFrom), so the call log says which agent made them,
// not who asked the agent (issue 22, item 9).
func TestToolCallsNameTheAgent(t *testing.T) {
	box := boxSpec{
		id:    "box",
		tools: []*mcp.Tool{{Name: "who", InputSchema: objectSchema(nil)}},
		call: func(ctx context.Context, _ string, _ json.RawMessage) (*mcp.CallToolResult, error) {
			c, _ := node.CallerFrom(ctx)
			return textResult(c.String()), nil
		},
	}
	srv := llmserver.Start(
		llmserver.Turn{ToolCalls: []llmserver.ToolCall{{Name: "box__who", Arguments: `{}`}}},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				if got, _ := r.ToolResult("call_1_0"); got != "llm:agent" {
					return fmt.Errorf("the tool saw caller %q, want llm:agent", got)
				}
				return nil
			},
			Text: "done",
		},
	)
	h := newHarness(t, srv, llm.Options{Tools: []string{"box"}}, box)
	ctx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerCLI})
	if _, err := h.chat(ctx, "who calls?", &recorder{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
