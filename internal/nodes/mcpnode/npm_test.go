package mcpnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// recordingHooks answers sampling and elicitation as a person would and
// records that it was asked.
type recordingHooks struct {
	mu      sync.Mutex
	sampled []string
	elicit  []string
}

func (h *recordingHooks) Sample(ctx context.Context, id string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.mu.Lock()
	h.sampled = append(h.sampled, id)
	h.mu.Unlock()
	return &mcp.CreateMessageResult{Role: "assistant", Model: "a-person", Content: &mcp.TextContent{Text: "forty-two"}}, nil
}

func (h *recordingHooks) Elicit(ctx context.Context, id string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.mu.Lock()
	h.elicit = append(h.elicit, p.Message)
	h.mu.Unlock()
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func callOK(t *testing.T, n *Node, tool, args string, observe func(node.CallEvent)) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := n.CallTool(ctx, &node.CallRequest{Tool: tool, Arguments: json.RawMessage(args), Observe: observe})
	if err != nil {
		t.Fatalf("%s(%s): %v", tool, args, err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		t.Fatalf("%s(%s): isError: %s", tool, args, b)
	}
	return res
}

func TestServerEverything(t *testing.T) {
	dir := t.TempDir()
	spec := stdioSpec("every", npmfix.ServerEverything(t))
	spec.Cwd = dir
	opts, _ := json.Marshal(map[string]any{"transport": "stdio", "roots": []string{dir}})
	spec.Options = opts
	hooks := &recordingHooks{}
	n, err := newNode(spec, node.Env{Hooks: hooks}, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	ctx := context.Background()

	tools, _ := n.ListTools(ctx)
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	if len(tools) < 10 || byName["echo"] == nil || byName["echo"].Description == "" || byName["echo"].InputSchema == nil {
		t.Fatalf("tools: %d, echo = %+v", len(tools), byName["echo"])
	}
	if sc := byName["get-structured-content"]; sc == nil || sc.OutputSchema == nil {
		t.Errorf("get-structured-content has no outputSchema: %+v", sc)
	}
	if got := text(t, callOK(t, n, "echo", `{"message":"hello"}`, nil)); !strings.Contains(got, "hello") {
		t.Errorf("echo = %q", got)
	}

	t.Run("image content", func(t *testing.T) {
		res := callOK(t, n, "get-tiny-image", `{}`, nil)
		found := false
		for _, c := range res.Content {
			if img, ok := c.(*mcp.ImageContent); ok && img.MIMEType == "image/png" && len(img.Data) > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("no PNG image in %d content blocks", len(res.Content))
		}
	})
	t.Run("structured content", func(t *testing.T) {
		res := callOK(t, n, "get-structured-content", `{"location":"Chicago"}`, nil)
		m, ok := res.StructuredContent.(map[string]any)
		if !ok || len(m) == 0 {
			t.Errorf("structuredContent = %#v", res.StructuredContent)
		}
	})
	t.Run("resource links", func(t *testing.T) {
		res := callOK(t, n, "get-resource-links", `{"count":2}`, nil)
		links := 0
		for _, c := range res.Content {
			if _, ok := c.(*mcp.ResourceLink); ok {
				links++
			}
		}
		if links != 2 {
			t.Errorf("%d resource links, want 2", links)
		}
	})
	t.Run("progress", func(t *testing.T) {
		var mu sync.Mutex
		var steps []float64
		callOK(t, n, "trigger-long-running-operation", `{"duration":1,"steps":4}`, func(e node.CallEvent) {
			if e.Kind == node.EventProgress {
				mu.Lock()
				steps = append(steps, e.Progress)
				mu.Unlock()
			}
		})
		mu.Lock()
		defer mu.Unlock()
		if len(steps) != 4 || steps[3] != 4 {
			t.Errorf("progress = %v, want 1..4", steps)
		}
	})
	t.Run("resources, templates, prompts", func(t *testing.T) {
		if len(n.Resources()) == 0 || len(n.ResourceTemplates()) == 0 || len(n.Prompts()) == 0 {
			t.Fatalf("resources %d, templates %d, prompts %d", len(n.Resources()), len(n.ResourceTemplates()), len(n.Prompts()))
		}
		r := n.Resources()[0]
		rr, err := n.ReadResource(ctx, r.URI)
		if err != nil || len(rr.Contents) == 0 {
			t.Errorf("ReadResource(%s) = %v, %v", r.URI, rr, err)
		}
		pr, err := n.GetPrompt(ctx, "args-prompt", map[string]string{"city": "Paris"})
		if err != nil || len(pr.Messages) == 0 || !strings.Contains(fmt.Sprint(pr.Messages[0].Content.(*mcp.TextContent).Text), "Paris") {
			t.Errorf("GetPrompt(args-prompt) = %+v, %v", pr, err)
		}
		if err := n.SetLoggingLevel(ctx, "debug"); err != nil {
			t.Errorf("SetLoggingLevel: %v", err)
		}
	})
	t.Run("the configured roots", func(t *testing.T) {
		if got := text(t, callOK(t, n, "get-roots-list", `{}`, nil)); !strings.Contains(got, dir) {
			t.Errorf("roots = %q, want %s", got, dir)
		}
	})
	t.Run("sampling and elicitation reach the hooks", func(t *testing.T) {
		res := callOK(t, n, "trigger-sampling-request", `{"prompt":"meaning of life?"}`, nil)
		b, _ := json.Marshal(res.Content)
		if !strings.Contains(string(b), "forty-two") {
			t.Errorf("sampling result %s does not carry the hook's answer", b)
		}
		callOK(t, n, "trigger-elicitation-request", `{}`, nil)
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		if len(hooks.sampled) != 1 || hooks.sampled[0] != "every" || len(hooks.elicit) != 1 {
			t.Errorf("hooks asked: sampling %v, elicitation %v", hooks.sampled, hooks.elicit)
		}
	})
}

// TestServerFilesystem is README's example: server-filesystem limited to
// one folder on its command line. nerve must not widen that with roots, from
// whatever folder the node runs in (/ and $HOME were the escapes: the server
// replaced its folder with the client's roots).
func TestServerFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("contents of a"), 0o644); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{"/", home} {
		t.Run("cwd "+cwd, func(t *testing.T) {
			spec := stdioSpec("fs", append(npmfix.ServerFilesystem(t), dir))
			spec.Cwd = cwd
			n, err := newNode(spec, node.Env{}, defaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			mustStart(t, n)
			want, _ := filepath.EvalSymlinks(dir)
			if got := text(t, callOK(t, n, "list_allowed_directories", `{}`, nil)); !strings.Contains(got, want) || strings.Count(got, "/") != strings.Count(want, "/") {
				t.Errorf("list_allowed_directories = %q, want exactly %s", got, want)
			}
			if s := strings.Join(n.StderrTail(), "\n"); strings.Contains(s, "from MCP roots") {
				t.Errorf("the server took roots from nerve:\n%s", s)
			}
			args, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "a.txt")})
			if got := text(t, callOK(t, n, "read_file", string(args), nil)); got != "contents of a" {
				t.Errorf("read_file = %q", got)
			}
			out, _ := json.Marshal(map[string]string{"path": "/etc/hostname"})
			res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "read_file", Arguments: out})
			if err != nil || !res.IsError {
				t.Errorf("reading /etc/hostname outside the folder: %v, %v; want an IsError result", res, err)
			}
		})
	}
}

// TestServerFilesystemConfiguredRoots: roots the user configures are
// offered, and a server with no folder on its command line takes them.
func TestServerFilesystemConfiguredRoots(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("contents of a"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := stdioSpec("fs", npmfix.ServerFilesystem(t))
	opts, _ := json.Marshal(map[string]any{"transport": "stdio", "roots": []string{dir}})
	spec.Options = opts
	spec.Cwd = "/"
	n, err := newNode(spec, node.Env{}, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	// The server asks for roots after initialize and applies them in the
	// background; its stderr says when.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return strings.Contains(strings.Join(n.StderrTail(), "\n"), "Updated allowed directories from MCP roots: 1 valid")
	}, "server-filesystem to take the configured root")
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "a.txt")})
	if got := text(t, callOK(t, n, "read_file", string(args), nil)); got != "contents of a" {
		t.Errorf("read_file = %q", got)
	}
	out, _ := json.Marshal(map[string]string{"path": "/etc/hostname"})
	res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "read_file", Arguments: out})
	if err != nil || !res.IsError {
		t.Errorf("reading outside the roots: %v, %v; want an IsError result", res, err)
	}
}

func TestServerMemory(t *testing.T) {
	n, err := newNode(stdioSpec("mem", npmfix.ServerMemory(t)), node.Env{}, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, n)
	const entities = 20
	for i := range entities {
		callOK(t, n, "create_entities", fmt.Sprintf(`{"entities":[{"name":"e%d","entityType":"thing","observations":["seen %d"]}]}`, i, i), nil)
	}
	for i := range entities {
		callOK(t, n, "add_observations", fmt.Sprintf(`{"observations":[{"entityName":"e%d","contents":["again %d"]}]}`, i, i), nil)
	}
	res := callOK(t, n, "read_graph", `{}`, nil)
	got := text(t, res)
	for _, want := range []string{`"e0"`, `"e19"`, "again 19", "seen 7"} {
		if !strings.Contains(got, want) {
			t.Errorf("graph after %d calls lacks %s", 2*entities, want)
		}
	}
	if info := n.Info(); info.Calls != 2*entities+1 || info.Failures != 0 {
		t.Errorf("Info calls %d failures %d", info.Calls, info.Failures)
	}
}
