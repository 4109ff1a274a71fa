package mcpconf

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
)

func TestSpecRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		server Server
		opts   string
	}{
		{
			name: "stdio",
			server: Server{Name: "fs", Transport: "stdio", Command: []string{"npx", "-y", "${PKG}"}, Cwd: "${HOME}",
				Env: map[string]string{"TOKEN": "${TOKEN}"}, InheritEnv: true, Timeout: 90 * time.Second},
			opts: `{"transport":"stdio","inherit_env":true,"timeout":"1m30s"}`,
		},
		{
			name:   "http",
			server: Server{Name: "api", Transport: "http", URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Bearer ${T}"}},
			opts:   `{"transport":"http","url":"https://x/mcp","headers":{"Authorization":"Bearer ${T}"}}`,
		},
		{
			name:   "sse",
			server: Server{Name: "old", Transport: "sse", URL: "https://x/sse"},
			opts:   `{"transport":"sse","url":"https://x/sse"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.server.Spec("n1")
			if spec.ID != "n1" || spec.Kind != "mcp" || string(spec.Options) != tt.opts {
				t.Errorf("spec = %s %s %s; want options %s", spec.ID, spec.Kind, spec.Options, tt.opts)
			}
			if !reflect.DeepEqual(spec.Command, tt.server.Command) || spec.Cwd != tt.server.Cwd || !reflect.DeepEqual(spec.Env, tt.server.Env) {
				t.Errorf("spec = %+v, want the server's command, cwd and env unexpanded", spec)
			}
			// Through JSON, as the session saves it, and back.
			raw, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			var saved node.Spec
			if err := json.Unmarshal(raw, &saved); err != nil {
				t.Fatal(err)
			}
			back, _, err := ServerFromSpec(saved)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.server
			want.Name = "n1"
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestSpecIsACopy(t *testing.T) {
	s := Server{Name: "a", Transport: "stdio", Command: []string{"x"}, Env: map[string]string{"A": "1"}}
	spec := s.Spec("a")
	spec.Command[0], spec.Env["A"] = "y", "2"
	if s.Command[0] != "x" || s.Env["A"] != "1" {
		t.Errorf("changing the spec changed the server: %+v", s)
	}
}

func TestServerFromSpecErrors(t *testing.T) {
	tests := []struct {
		spec node.Spec
		want string
	}{
		{node.Spec{ID: "b", Kind: "bash"}, `node "b" is a bash node, not an mcp node`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"transport":"ws","url":"x"}`)}, `mcp node "m": unknown transport "ws": use "stdio", "http" or "sse"`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"transport":"stdio"}`)}, `mcp node "m": a stdio server needs a command`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"transport":"http"}`)}, `mcp node "m": an http server needs a url`},
		{node.Spec{ID: "m", Kind: "mcp", Command: []string{"x"}, Options: json.RawMessage(`{"transprt":"stdio"}`)}, `options of mcp node "m": json: unknown field "transprt"`},
	}
	for _, tt := range tests {
		_, _, err := ServerFromSpec(tt.spec)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ServerFromSpec(%+v) = %v\nwant %s", tt.spec, err, tt.want)
		}
	}
}

func TestServerFromSpecInfersTransport(t *testing.T) {
	for _, tt := range []struct {
		spec node.Spec
		want string
	}{
		{node.Spec{ID: "a", Kind: "mcp", Command: []string{"x"}}, "stdio"},
		{node.Spec{ID: "a", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/sse"}`)}, "sse"},
		{node.Spec{ID: "a", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp"}`)}, "http"},
	} {
		s, _, err := ServerFromSpec(tt.spec)
		if err != nil || s.Transport != tt.want {
			t.Errorf("ServerFromSpec(%s) transport = %q, %v; want %q", tt.spec.Options, s.Transport, err, tt.want)
		}
	}
}
