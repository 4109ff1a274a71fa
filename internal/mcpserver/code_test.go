package mcpserver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// callLog is a session's call log as a test reads it.
type callLog struct {
	mu    sync.Mutex
	calls []*session.CallInfo
}

func (l *callLog) add(_ context.Context, c *session.CallInfo) {
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

func (l *callLog) all() []*session.CallInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// TestCodeMode: with Code, a client sees run_script alone, whose
// description lists the exposed tools (and not the hidden ones); a
// script calls two tools as that client — each call in the call log
// under the script's run — is told of each call as progress, and cannot
// call a tool its client's filter hides (issue 30, item 3).
func TestCodeMode(t *testing.T) {
	log := &callLog{}
	s := session.New("test", all.Registry(nil), &session.Options{Dir: t.TempDir(), OnCall: log.add})
	t.Cleanup(func() { s.Close(context.Background()) })
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	addNode(t, s, node.Spec{ID: "bash", Kind: "bash"})
	srv := serve(t, NewSessionBackend(s), &Options{Code: true, Tools: "echo.*"})
	cs, ev := connect(t, srv, nil)

	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.Tools) != 1 || lt.Tools[0].Name != "run_script" {
		t.Fatalf("tools with --code: %v, want run_script alone", toolNamesOf(lt.Tools))
	}
	desc := lt.Tools[0].Description
	if !strings.Contains(desc, "echo.identity(text: str)") || strings.Contains(desc, "bash.bash") {
		t.Errorf("run_script's description should list echo.identity and not the hidden bash.bash:\n%s", desc)
	}

	p := &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": "a = echo.identity(text=\"one\")\nb = echo.identity(text=a + \" two\")\nresult = {\"b\": b}"}}
	p.SetProgressToken("s1")
	res, err := cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("run_script: %v %s", err, resultText(res))
	}
	if got := resultText(res); got != `{"b":"one two"}` {
		t.Errorf("run_script's text %q", got)
	}
	run, _ := res.StructuredContent.(map[string]any)["run"].(string)
	calls := log.all()
	if len(calls) != 2 {
		t.Fatalf("the call log has %d calls, want the script's 2", len(calls))
	}
	for i, c := range calls {
		want := node.Caller{Kind: "script", Name: "mcp:test-client", Via: "stdio", Run: run, Step: []string{"1:18", "2:18"}[i]}
		if c.Node != "echo" || c.Caller != want {
			t.Errorf("call %d: %s.%s by %+v, want echo.identity by %+v", i, c.Node, c.Tool, c.Caller, want)
		}
	}
	for i := range 2 {
		select {
		case pr := <-ev.progress:
			if !strings.HasPrefix(pr.Message, "echo.identity done (line ") {
				t.Errorf("progress %d: %q", i, pr.Message)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("progress notice %d never came", i)
		}
	}

	// A hidden tool is not there for a script either, whether named as a
	// function or by its name; nothing ran.
	for _, src := range []string{`bash.bash(command="touch x")`, `tool("bash.bash", command="touch x")`} {
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": src}})
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "bash") || !strings.Contains(resultText(res), "visible to this script") {
			t.Errorf("a script calling the hidden bash.bash (%s): %v %s", src, err, resultText(res))
		}
	}
	if n := len(log.all()); n != 2 {
		t.Errorf("the call log has %d calls after the refused scripts, want 2", n)
	}

}

// TestCodeWithDiscover: with Discover too, run_script is served beside
// search_tools, describe_tool and call_tool (its description points to
// them when the signatures do not fit: codemode's TestToolDescription).
func TestCodeWithDiscover(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	srv := serve(t, NewSessionBackend(s), &Options{Code: true, Discover: true})
	cs, ev := connect(t, srv, nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"call_tool", "describe_tool", "run_script", "search_tools"}) {
		t.Fatalf("tools with --code --discover: %v", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": `echo.identity(text="hi")`}})
	if err != nil || res.IsError || resultText(res) != "hi" {
		t.Errorf("run_script with discovery: %v %s", err, resultText(res))
	}
	// A node added later is in the description after list_changed.
	addNode(t, s, node.Spec{ID: "echo2", Kind: "identity"})
	deadline := time.After(15 * time.Second)
	for changed := false; !changed; {
		select {
		case <-ev.toolsChanged:
		case <-deadline:
			t.Fatal("run_script's description never listed echo2.identity")
		}
		lt, err := cs.ListTools(t.Context(), nil)
		if err == nil && slices.ContainsFunc(lt.Tools, func(t *mcp.Tool) bool { return strings.Contains(t.Description, "echo2.identity(text: str)") }) {
			changed = true
		}
	}
	// A filter that excludes run_script by name hides it.
	srv2 := serve(t, NewSessionBackend(s), &Options{Code: true, Tools: "!run_script"})
	cs2, _ := connect(t, srv2, nil)
	if got := toolNames(t, cs2); len(got) != 0 {
		t.Errorf("tools with --code --tools '!run_script': %v, want none", got)
	}
}

func toolNamesOf(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}
