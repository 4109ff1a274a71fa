//go:build unix

package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

func listNodesOf(t *testing.T, cs *mcp.ClientSession) []nodeView {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolListNodes})
	if err != nil || res.IsError {
		t.Fatalf("list_nodes: %v %s", err, mustJSON(res))
	}
	var out struct{ Nodes []nodeView }
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatalf("list_nodes answered %q: %v", resultText(res), err)
	}
	return out.Nodes
}

// TestManage: with Options.Manage a client sees a killed server in ERROR
// with its reason through list_nodes and brings it back with
// restart_node; the nodes its exposure hides are neither shown nor
// restartable, and --read-only drops restart_node.
func TestManage(t *testing.T) {
	s := newSession(t)
	addNode(t, s, fixtureNode(t, "fx"))
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	addNode(t, s, node.Spec{ID: "sh", Kind: "bash"})
	if err := s.SetSettings(session.Settings{Expose: "!sh"}); err != nil {
		t.Fatal(err)
	}
	cs, _ := connect(t, serve(t, NewSessionBackend(s), &Options{Manage: true}), nil)
	names := toolNames(t, cs)
	if !slices.Contains(names, ToolListNodes) || !slices.Contains(names, ToolRestartNode) || !slices.Contains(names, "fx.echo") {
		t.Fatalf("tools = %v, want the session's tools and the management tools", names)
	}
	var ids []string
	for _, n := range listNodesOf(t, cs) {
		ids = append(ids, n.ID)
	}
	if !slices.Equal(ids, []string{"fx", "echo"}) {
		t.Errorf("list_nodes shows %v, want fx and echo (sh is hidden)", ids)
	}

	fx, _ := s.Node("fx")
	pid, _ := fx.Info().Details["pid"].(int)
	if pid == 0 {
		t.Fatalf("no pid in fx's Info: %+v", fx.Info().Details)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return fx.State() == node.Error }, "fx to go ERROR after its server was killed")
	var got nodeView
	for _, n := range listNodesOf(t, cs) {
		if n.ID == "fx" {
			got = n
		}
	}
	if got.State != node.Error || !strings.Contains(got.Error, "signal") {
		t.Errorf("list_nodes shows fx as %+v, want ERROR naming the signal", got)
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRestartNode, Arguments: map[string]any{"node": "fx"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), `"state":"READY"`) {
		t.Fatalf("restart_node fx: %v %s", err, mustJSON(res))
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fx.echo", Arguments: map[string]any{"text": "back"}}); err != nil || resultText(res) != "back" {
		t.Errorf("fx.echo after the restart: %v %s", err, mustJSON(res))
	}

	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRestartNode, Arguments: map[string]any{"node": "sh"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "list_nodes") {
		t.Errorf("restart_node of hidden sh: %v %s, want a tool error pointing to list_nodes", err, mustJSON(res))
	}

	ro, _ := connect(t, serve(t, NewSessionBackend(s), &Options{Manage: true, ReadOnly: true, Tools: "!list_nodes"}), nil)
	if got := toolNames(t, ro); slices.Contains(got, ToolRestartNode) || slices.Contains(got, ToolListNodes) {
		t.Errorf("read-only client with !list_nodes lists %v: want neither management tool", got)
	}
}
