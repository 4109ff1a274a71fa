package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/bash"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestToolLoopThroughRealNodes drives the agent loop against real peers:
// the reference "everything" MCP server behind an mcp node, and a bash
// shell behind a bash node. The scripted model calls both in one step,
// then asks for an image, then answers.
func TestToolLoopThroughRealNodes(t *testing.T) {
	everything := npmfix.ServerEverything(t)
	srv := llmserver.Start(
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				names := r.ToolNames()
				for _, want := range []string{"everything__echo", "everything__get-tiny-image", "sh__bash"} {
					if !slices.Contains(names, want) {
						return fmt.Errorf("tool %s not offered (got %v)", want, names)
					}
				}
				// Schemas as providers accept them: server-everything's zod
				// schemas carry $schema, bash's timeout_s an exclusiveMinimum.
				for _, bad := range []string{`"$schema"`, `"exclusiveMinimum"`, `"exclusiveMaximum"`} {
					if strings.Contains(string(r.Body), bad) {
						return fmt.Errorf("the request still holds %s", bad)
					}
				}
				sh, _ := r.Tool("sh__bash")
				ts, _ := sh.Function.Parameters["properties"].(map[string]any)["timeout_s"].(map[string]any)
				if ts["minimum"] != 0.0 || !strings.Contains(fmt.Sprint(ts["description"]), "must be > 0") {
					return fmt.Errorf("bash timeout_s cleaned to %v; want the strict bound kept in words", ts)
				}
				return nil
			},
			Text: "Calling both.",
			ToolCalls: []llmserver.ToolCall{
				{Name: "everything__echo", Arguments: `{"message":"hi from the model"}`},
				{Name: "sh__bash", Arguments: `{"command":"cd /tmp && echo $((6*7))"}`},
			},
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				echo, _ := r.ToolResult("call_1_0")
				sh, _ := r.ToolResult("call_1_1")
				if echo != "Echo: hi from the model" {
					return fmt.Errorf("echo result %q", echo)
				}
				if !strings.Contains(sh, "42") {
					return fmt.Errorf("bash result %q", sh)
				}
				return nil
			},
			ToolCalls: []llmserver.ToolCall{
				{Name: "everything__get-tiny-image"},
				{Name: "sh__bash", Arguments: `{"command":"pwd"}`},
			},
		},
		llmserver.Turn{
			Check: func(r *llmserver.Request) error {
				img, _ := r.ToolResult("call_2_0")
				if !strings.Contains(img, "[image/png") {
					return fmt.Errorf("image result %q: every content block should be described", img)
				}
				// The shell kept its working directory between calls.
				if pwd, _ := r.ToolResult("call_2_1"); !strings.HasPrefix(pwd, "/tmp") {
					return fmt.Errorf("pwd result %q, want /tmp", pwd)
				}
				return nil
			},
			Text: "Echoed, computed 42, saw a tiny image.",
		},
	)
	defer srv.Close()

	reg := registry()
	reg.Register(bash.Kind, bash.New)
	reg.Register(mcpnode.Kind, mcpnode.Factory(nil))
	s := session.New("e2e", reg, &session.Options{Dir: t.TempDir()})
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	specs := []node.Spec{
		{ID: "everything", Kind: mcpnode.Kind, Command: everything, Options: json.RawMessage(`{"transport":"stdio"}`)},
		{ID: "sh", Kind: bash.Kind},
	}
	opts, _ := json.Marshal(llm.Options{BaseURL: srv.URL, Model: "m", Tools: []string{"everything", "sh"}})
	specs = append(specs, node.Spec{ID: "agent", Kind: llm.Kind, Options: opts})
	for _, sp := range specs {
		if _, err := s.Add(ctx, sp); err != nil {
			t.Fatalf("adding %s: %v", sp.ID, err)
		}
	}
	rec := &recorder{}
	args, _ := json.Marshal(map[string]string{"message": "echo, compute, look"})
	res, err := s.Call(ctx, "agent", &node.CallRequest{Tool: llm.ToolName, Arguments: args, Observe: rec.observe})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "Echoed, computed 42, saw a tiny image." {
		t.Errorf("answer %q", got)
	}
	var tools []any
	for _, c := range rec.stepData("tool_call") {
		tools = append(tools, c["tool"])
	}
	if want := []any{"everything.echo", "sh.bash", "everything.get-tiny-image", "sh.bash"}; !sameElements(tools, want) {
		t.Errorf("tool_call steps %v, want %v", tools, want)
	}
}

func sameElements(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[any]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	for _, c := range count {
		if c != 0 {
			return false
		}
	}
	return true
}

// sampler answers sampling requests with an llm node, as --sampling-node
// will once the session's hooks are wired to it (after consent).
type sampler struct{ agent *llm.Node }

func (h sampler) Sample(ctx context.Context, nodeID string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return h.agent.Sample(ctx, p)
}

func (h sampler) Elicit(ctx context.Context, nodeID string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}

// TestSamplingFromARealServer: server-everything's
// trigger-sampling-request asks the client for a completion; the llm node
// answers it with the model.
func TestSamplingFromARealServer(t *testing.T) {
	everything := npmfix.ServerEverything(t)
	srv := llmserver.Start(llmserver.Turn{
		Check: func(r *llmserver.Request) error {
			if r.Messages[0].Role != "system" || r.Messages[0].Text() != "You are a helpful test server." {
				return fmt.Errorf("system prompt %+v", r.Messages[0])
			}
			if r.MaxTokens != 30 || r.Temperature == nil || *r.Temperature != 0.7 || len(r.Tools) != 0 {
				return fmt.Errorf("max_tokens %d temperature %v tools %v", r.MaxTokens, r.Temperature, r.ToolNames())
			}
			if !strings.Contains(r.Last().Text(), "write a limerick") {
				return fmt.Errorf("prompt %q", r.Last().Text())
			}
			return nil
		},
		Text: "There once was a node from Nantucket",
	})
	defer srv.Close()
	reg := registry()
	reg.Register(mcpnode.Kind, mcpnode.Factory(nil))
	s := session.New("e2e", reg, &session.Options{Dir: t.TempDir()})
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts, _ := json.Marshal(llm.Options{BaseURL: srv.URL, Model: "m"})
	agent, err := s.Add(ctx, node.Spec{ID: "agent", Kind: llm.Kind, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	s.SetHooks(sampler{agent.(*llm.Node)})
	if _, err := s.Add(ctx, node.Spec{ID: "everything", Kind: mcpnode.Kind, Command: everything, Options: json.RawMessage(`{"transport":"stdio"}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(ctx, "everything", &node.CallRequest{Tool: "trigger-sampling-request", Arguments: json.RawMessage(`{"prompt":"write a limerick","maxTokens":30}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	got := node.ResultText(res, 0)
	for _, want := range []string{"There once was a node from Nantucket", `"model": "m"`, `"stopReason": "endTurn"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the server's result %q lacks %q", got, want)
		}
	}
}
