package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	mcpnode "github.com/nerve-dev/nerve/internal/nodes/mcpnode"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// systemHas checks that a request's system prompt holds every one of want.
func systemHas(want ...string) func(*llmserver.Request) error {
	return func(r *llmserver.Request) error {
		if len(r.Messages) == 0 || r.Messages[0].Role != "system" {
			return fmt.Errorf("no system message: %s", r.Body)
		}
		sys := r.Messages[0].Text()
		for _, w := range want {
			if !strings.Contains(sys, w) {
				return fmt.Errorf("the system prompt lacks %q:\n%s", w, sys)
			}
		}
		return nil
	}
}

// TestResourcesReachTheModel: an llm node given a resource of an mcp node
// (fixtures/mcpserver's text resource) sends its text to the model, in
// the system prompt of every turn, after the node's own; the saved
// conversation does not keep copies of it (issue 27).
func TestResourcesReachTheModel(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Check: systemHas("Be brief.", "--- resource fx:fixture://text/hello ---\nhello from the nerve fixture\n--- end of fx:fixture://text/hello ---"), Text: "one"},
		llmserver.Turn{Check: systemHas("hello from the nerve fixture"), Text: "two"},
	)
	defer srv.Close()
	reg := registry()
	reg.Register(mcpnode.Kind, mcpnode.Factory(nil))
	var saved atomic.Pointer[[]node.Spec]
	s := session.New("res", reg, &session.Options{Dir: t.TempDir(), Save: func(specs []node.Spec) error { saved.Store(&specs); return nil }})
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.Add(ctx, node.Spec{ID: "fx", Kind: mcpnode.Kind, Command: []string{testutil.BuildBinary(t, "./fixtures/mcpserver")}, Options: json.RawMessage(`{"transport":"stdio"}`)}); err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(llm.Options{BaseURL: srv.URL, Model: "m", System: "Be brief.", Resources: []string{"fx:fixture://text/hello"}})
	if _, err := s.Add(ctx, node.Spec{ID: "agent", Kind: llm.Kind, Options: opts}); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"first", "second"} {
		if _, err := s.Call(ctx, "agent", &node.CallRequest{Tool: llm.ToolName, Arguments: json.RawMessage(`{"message":"` + msg + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	for _, spec := range *saved.Load() {
		if spec.ID == "agent" && strings.Contains(string(spec.State), "hello from the nerve fixture") {
			t.Errorf("the saved conversation holds the resource's text: %s", spec.State)
		}
	}
}

// doc is a node with one text resource whose text the test sets.
type doc struct {
	toolbox
	text atomic.Pointer[string]
	blob bool
}

func (d *doc) ReadResource(_ context.Context, uri string) (*mcp.ReadResourceResult, error) {
	if d.blob {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "image/png", Blob: []byte{1, 2, 3}}}}, nil
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: *d.text.Load()}}}, nil
}

// TestResourcesEachTurn: a resource is read again at every turn, so the
// model sees it as it is now; a resource over the bound, or binary, fails
// the call with a message that says which and why, before the model is
// asked and without the message joining the conversation; a resource
// written without its node is refused when the node is added.
func TestResourcesEachTurn(t *testing.T) {
	srv := llmserver.Start(
		llmserver.Turn{Check: systemHas("version 1"), Text: "one"},
		llmserver.Turn{Check: systemHas("version 2"), Text: "two"},
	)
	defer srv.Close()
	d := &doc{}
	v := "version 1"
	d.text.Store(&v)
	reg := registry()
	reg.Register("doc", func(spec node.Spec, env node.Env) (node.Node, error) {
		d.Init(spec, env)
		return d, nil
	})
	s := session.New("res", reg, nil)
	defer s.Close(context.Background())
	ctx := context.Background()
	if _, err := s.Add(ctx, node.Spec{ID: "notes", Kind: "doc"}); err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(llm.Options{BaseURL: srv.URL, Model: "m", Resources: []string{"notes:note://today"}})
	agent, err := s.Add(ctx, node.Spec{ID: "agent", Kind: llm.Kind, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	call := func(msg string) error {
		_, err := s.Call(ctx, "agent", &node.CallRequest{Tool: llm.ToolName, Arguments: json.RawMessage(`{"message":"` + msg + `"}`)})
		return err
	}
	if err := call("first"); err != nil {
		t.Fatal(err)
	}
	v = "version 2"
	d.text.Store(&v)
	if err := call("second"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	messages := func() float64 { m, _ := agent.Info().Details["messages"].(int); return float64(m) }
	before := messages()

	big := strings.Repeat("x", llm.MaxResourceBytes+1)
	d.text.Store(&big)
	if err := call("third"); err == nil || !strings.Contains(err.Error(), "resource notes:note://today brings the resources of node \"agent\" to 131073 bytes, over the 128 KiB") {
		t.Errorf("an oversized resource: %v", err)
	}
	d.blob = true
	if err := call("third"); err == nil || !strings.Contains(err.Error(), "resource notes:note://today is binary (image/png): an llm node's resources must be text") {
		t.Errorf("a binary resource: %v", err)
	}
	if after := messages(); after != before {
		t.Errorf("the conversation went from %v to %v messages on failed turns", before, after)
	}

	bad, _ := json.Marshal(llm.Options{BaseURL: srv.URL, Model: "m", Resources: []string{"file:///x/README.md"}})
	if _, err := s.Add(ctx, node.Spec{ID: "bad", Kind: llm.Kind, Options: bad}); err == nil || !strings.Contains(err.Error(), "write NODE:URI") {
		t.Errorf("a resource without its node: %v", err)
	}
}
