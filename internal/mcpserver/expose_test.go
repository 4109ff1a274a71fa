package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

func TestFilter(t *testing.T) {
	tools := []string{"fs.read_file", "fs.write_file", "github.create_issue", "github.delete_repo", "github.delete_issue", "sh.bash"}
	for _, tc := range []struct {
		globs string
		want  []string
	}{
		{"", tools},
		{"fs.*,github.*,!github.delete_*", []string{"fs.read_file", "fs.write_file", "github.create_issue"}},
		{"!sh.*", []string{"fs.read_file", "fs.write_file", "github.create_issue", "github.delete_repo", "github.delete_issue"}},
		{"fs", []string{"fs.read_file", "fs.write_file"}},
		{"!github", []string{"fs.read_file", "fs.write_file", "sh.bash"}},
		{"*.read_*, sh.bash", []string{"fs.read_file", "sh.bash"}},
		{"git*.*_issue,!*.delete_*", []string{"github.create_issue"}},
	} {
		t.Run(tc.globs, func(t *testing.T) {
			f, err := ParseFilter(tc.globs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range tools {
				id, name, _ := strings.Cut(q, ".")
				if (Exposure{f}).Allows(id, &mcp.Tool{Name: name}) {
					got = append(got, q)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q exposes %v, want %v", tc.globs, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"fs.[", "fs.*,!", "!  "} {
		if _, err := ParseFilter(bad); err == nil || !strings.Contains(err.Error(), "fs.*") && !strings.Contains(err.Error(), "delete_") {
			t.Errorf("ParseFilter(%q) = %v, want an error that shows a good filter", bad, err)
		}
	}
}

func TestFilterNodes(t *testing.T) {
	f, _ := ParseFilter("fs.read_*,git*.*,!github.*,!restart_node")
	e := Exposure{f}
	for id, want := range map[string]bool{"fs": true, "gitlab": true, "github": false, "sh": false} {
		if got := e.AllowsNode(id); got != want {
			t.Errorf("AllowsNode(%q) = %v, want %v", id, got, want)
		}
	}
	if !e.hidesName("restart_node") || e.hidesName("list_nodes") {
		t.Error("!restart_node should hide restart_node alone")
	}
}

// TestExpose serves a session whose default filter and client filter
// differ: a tool is listed and callable only when both expose it, the
// client cannot widen the session's filter, and changing the session's
// filter reaches a connected client as tools/list_changed.
func TestExpose(t *testing.T) {
	s := newSession(t)
	addNode(t, s, node.Spec{ID: "echo", Kind: "identity"})
	addNode(t, s, node.Spec{ID: "sh", Kind: "bash"})
	addNode(t, s, node.Spec{ID: "sh2", Kind: "bash"})
	if err := s.SetSettings(session.Settings{Expose: "echo.*,sh*.*,!sh2.*"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		opts     Options
		want     []string
		hidden   string
		readOnly bool
	}{
		{"session default", Options{}, []string{"echo.identity", "sh.bash"}, "sh2.bash", false},
		{"client narrows", Options{Tools: "!sh.*"}, []string{"echo.identity"}, "sh.bash", false},
		{"client cannot widen", Options{Tools: "sh2.*,echo.*"}, []string{"echo.identity"}, "sh2.bash", false},
		{"read-only", Options{ReadOnly: true}, []string{"echo.identity"}, "sh.bash", true},
		{"node mode", Options{Node: "sh2"}, nil, "bash", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := connect(t, serve(t, NewSessionBackend(s), &tc.opts), nil)
			if got := toolNames(t, cs); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.hidden, Arguments: map[string]any{"command": "touch /tmp/never"}})
			if err == nil {
				t.Errorf("calling hidden %s answered %s, want an unknown-tool error", tc.hidden, mustJSON(res))
			}
		})
	}

	cs, ev := connect(t, serve(t, NewSessionBackend(s), nil), nil)
	if err := s.SetSettings(session.Settings{Expose: "!sh.bash"}); err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, ev, "sh2.bash shown and sh.bash hidden", func(n []string) bool {
		return slices.Equal(n, []string{"echo.identity", "sh2.bash"})
	})
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "sh.bash", Arguments: map[string]any{"command": "true"}}); err == nil {
		t.Error("sh.bash hidden by the session is still callable")
	}
}
