package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// argsNode answers every call with the tool it was called by and the
// arguments it got, as JSON: what the node saw, not what the caller sent.
type argsNode struct {
	fakeNode
}

func (a *argsNode) CallTool(ctx context.Context, req *node.CallRequest) (*mcp.CallToolResult, error) {
	if err := a.BeginCall(); err != nil {
		return nil, err
	}
	defer a.EndCall(false)
	b, _ := json.Marshal(map[string]any{"tool": req.Tool, "args": json.RawMessage(req.Arguments)})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}

func fsTools() []*mcp.Tool {
	return []*mcp.Tool{
		{Name: "write_file", Description: "Write a file.", InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":    map[string]any{"type": "string"},
				"content": map[string]any{"type": "string"},
				"mode":    map[string]any{"type": "string", "enum": []any{"w", "a"}, "default": "w"},
				"mkdir":   map[string]any{"type": "boolean"},
			},
			"required":             []any{"path", "content"},
			"additionalProperties": false,
		}},
		{Name: "read_file", Description: "Read a file.", InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string"}},
			"required":   []any{"path"},
		}},
	}
}

// overrideSession is a session with node fs (an argsNode with fsTools),
// saving its specs into the returned func's result.
func overrideSession(t *testing.T, opts *session.Options) (*session.Session, func() []node.Spec) {
	t.Helper()
	var mu sync.Mutex
	var saved []node.Spec
	if opts == nil {
		opts = &session.Options{}
	}
	opts.Save = func(specs []node.Spec) error {
		mu.Lock()
		saved = specs
		mu.Unlock()
		return nil
	}
	reg := &session.Registry{}
	reg.Register("args", func(spec node.Spec, env node.Env) (node.Node, error) {
		a := &argsNode{fakeNode{env: env, tools: fsTools()}}
		a.Init(spec, env)
		return a, nil
	})
	s := session.New("test", reg, opts)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	if _, err := s.Add(t.Context(), node.Spec{ID: "fs", Kind: "args"}); err != nil {
		t.Fatal(err)
	}
	return s, func() []node.Spec {
		mu.Lock()
		defer mu.Unlock()
		return saved
	}
}

func callText(t *testing.T, s *session.Session, id, tool, args string) (string, error) {
	t.Helper()
	res, err := s.Call(t.Context(), id, &node.CallRequest{Tool: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

func TestOverrideShownAndCalled(t *testing.T) {
	var logged []string
	s, saved := overrideSession(t, &session.Options{OnCall: func(_ context.Context, c *session.CallInfo) {
		logged = append(logged, c.Tool)
	}})
	ctx := t.Context()
	tool, err := s.SetOverride(ctx, "fs", "write_file", api.ToolOverride{
		Name: "save", Description: "Save a note.", Title: "Save",
		Destructive: new(false), Idempotent: new(true),
		Fixed:  map[string]json.RawMessage{"path": json.RawMessage(`"/srv/note.txt"`)},
		Hidden: []string{"mode"},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Name != "save" || tool.Description != "Save a note." || tool.Title != "Save" {
		t.Errorf("tool as set = %+v", tool)
	}
	tools, err := s.Tools(ctx, "fs")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "save,read_file" {
		t.Fatalf("tools = %v, want save,read_file", names)
	}
	schema, _ := json.Marshal(tools[0].InputSchema)
	for _, gone := range []string{`"path"`, `"mode"`} {
		if strings.Contains(string(schema), gone) {
			t.Errorf("schema still has %s: %s", gone, schema)
		}
	}
	if !strings.Contains(string(schema), `"required":["content"]`) {
		t.Errorf("schema's required = %s, want only content", schema)
	}
	if a := tools[0].Annotations; a == nil || a.DestructiveHint == nil || *a.DestructiveHint || !a.IdempotentHint {
		t.Errorf("annotations = %+v, want destructive false, idempotent true", a)
	}
	if _, ok := s.Toolset(ctx).Lookup("fs.save"); !ok {
		t.Error("the toolset has no fs.save")
	}
	if _, ok := s.Toolset(ctx).Lookup("fs__save"); !ok {
		t.Error("the toolset has no LLM name fs__save")
	}

	got, err := callText(t, s, "fs", "save", `{"content":"hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"args":{"content":"hi","path":"/srv/note.txt"},"tool":"write_file"}`; got != want {
		t.Errorf("the node got %s, want %s", got, want)
	}
	// Through the session's ToolCaller (llm nodes, code mode) too.
	res, err := s.CallTool(ctx, "fs__save", json.RawMessage(`{"content":"x"}`), nil)
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"path":"/srv/note.txt"`) {
		t.Errorf("CallTool(fs__save) = %v, %v", res, err)
	}
	for _, args := range []string{`{"content":"hi","path":"/etc/passwd"}`, `{"content":"hi","mode":"a"}`} {
		_, err := callText(t, s, "fs", "save", args)
		if !errors.Is(err, node.ErrBadArgs) || !strings.Contains(err.Error(), "by the session's override") {
			t.Errorf("call with %s: %v; want refused as an overridden argument", args, err)
		}
	}
	if _, err := callText(t, s, "fs", "write_file", `{"content":"hi","path":"/x"}`); !errors.Is(err, node.ErrUnknownTool) {
		t.Errorf("call by the old name: %v; want unknown tool", err)
	}
	if strings.Join(logged, ",") != "save,save,save,save,write_file" {
		t.Errorf("the call log saw tools %v, want the names the callers used", logged)
	}
	specs := saved()
	if len(specs) != 1 || specs[0].Overrides["write_file"].Name != "save" {
		t.Errorf("saved specs = %+v, want the override under write_file", specs)
	}

	// Added to by its new name, then cleared by it.
	if _, err := s.SetOverride(ctx, "fs", "save", api.ToolOverride{Description: "Save it."}, true); err != nil {
		t.Fatal(err)
	}
	spec, _ := s.Spec("fs")
	if ov := spec.Overrides["write_file"]; ov.Name != "save" || ov.Description != "Save it." || len(ov.Fixed) != 1 {
		t.Errorf("merged override = %+v", ov)
	}
	if _, err := s.SetOverride(ctx, "fs", "save", api.ToolOverride{}, false); err != nil {
		t.Fatal(err)
	}
	if got, err := callText(t, s, "fs", "write_file", `{"content":"hi","path":"/x"}`); err != nil || !strings.Contains(got, `"path":"/x"`) {
		t.Errorf("after clearing: %s, %v", got, err)
	}
	if spec, _ := s.Spec("fs"); spec.Overrides != nil {
		t.Errorf("overrides after clearing = %v", spec.Overrides)
	}
}

func TestOverrideRefusedWhenItDoesNotFit(t *testing.T) {
	s, _ := overrideSession(t, nil)
	for _, tc := range []struct {
		name string
		tool string
		ov   api.ToolOverride
		want string
	}{
		{"unknown argument", "write_file", api.ToolOverride{Hidden: []string{"mdoe"}}, `no argument "mdoe"; did you mean "mode"?`},
		{"unknown fixed argument", "write_file", api.ToolOverride{Fixed: map[string]json.RawMessage{"paht": json.RawMessage(`"/x"`)}}, `did you mean "path"?`},
		{"fixed value of the wrong type", "write_file", api.ToolOverride{Fixed: map[string]json.RawMessage{"mkdir": json.RawMessage(`"yes"`)}}, "cannot fix mkdir to \"yes\""},
		{"fixed value outside the enum", "write_file", api.ToolOverride{Fixed: map[string]json.RawMessage{"mode": json.RawMessage(`"x"`)}}, "cannot fix mode"},
		{"required hidden without a value", "write_file", api.ToolOverride{Hidden: []string{"path"}}, "cannot hide path: write_file requires it; fix its value instead"},
		{"name taken", "write_file", api.ToolOverride{Name: "read_file"}, `name "read_file" is taken by another tool of node fs`},
		{"bad name", "write_file", api.ToolOverride{Name: "save file"}, "may hold only letters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SetOverride(t.Context(), "fs", tc.tool, tc.ov, false)
			if !errors.Is(err, session.ErrBadOverride) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrBadOverride saying %q", err, tc.want)
			}
		})
	}
	if _, err := s.SetOverride(t.Context(), "fs", "writ_file", api.ToolOverride{Name: "w"}, false); !errors.Is(err, node.ErrUnknownTool) || !strings.Contains(err.Error(), "write_file") {
		t.Errorf("unknown tool: %v", err)
	}
	if spec, _ := s.Spec("fs"); spec.Overrides != nil {
		t.Errorf("a refused override was kept: %v", spec.Overrides)
	}
	// A name taken by another override is taken too.
	if _, err := s.SetOverride(t.Context(), "fs", "read_file", api.ToolOverride{Name: "get"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetOverride(t.Context(), "fs", "write_file", api.ToolOverride{Name: "get"}, false); !errors.Is(err, session.ErrBadOverride) {
		t.Errorf("a name another override gave: %v", err)
	}
}

// TestOverrideKeptOnReplace: a spec sent again without overrides (graph
// edit) keeps the node's.
func TestOverrideKeptOnReplace(t *testing.T) {
	s, saved := overrideSession(t, nil)
	if _, err := s.SetOverride(t.Context(), "fs", "read_file", api.ToolOverride{Name: "get"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replace(t.Context(), node.Spec{ID: "fs", Kind: "args"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tool(t.Context(), "fs", "get"); err != nil {
		t.Errorf("after a replace: %v", err)
	}
	if specs := saved(); len(specs) != 1 || specs[0].Overrides["read_file"].Name != "get" {
		t.Errorf("saved after a replace: %+v", specs)
	}
}
