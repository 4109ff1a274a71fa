package cli

import (
	"strings"
	"testing"
)

func TestSetServerEntry(t *testing.T) {
	e := connectServer{Command: "/bin/nerve", Args: []string{"mcp", "serve"}}
	for _, tt := range []struct {
		name, in, want, err string
		remove              []string
	}{
		{name: "empty", in: "", want: "{\n  \"mcpServers\": {\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n"},
		{name: "no servers key", in: "{\n\t\"a\": 1\n}\n", want: "{\n\t\"a\": 1,\n\t\"mcpServers\": {\n\t\t\"nerve\": {\n\t\t\t\"command\": \"/bin/nerve\",\n\t\t\t\"args\": [\n\t\t\t\t\"mcp\",\n\t\t\t\t\"serve\"\n\t\t\t]\n\t\t}\n\t}\n}\n"},
		{name: "empty object", in: "{}", want: "{\n  \"mcpServers\": {\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}"},
		{name: "same entry: unchanged", in: `{"mcpServers": {"nerve": {"args": ["mcp", "serve"], "command": "/bin/nerve"}}}`, want: `{"mcpServers": {"nerve": {"args": ["mcp", "serve"], "command": "/bin/nerve"}}}`},
		{name: "stale entry replaced, others kept, moved removed", in: `{"x": [1], "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "nerve": {"command": "/old/nerve"}}}`,
			remove: []string{"b"},
			want:   "{\"x\": [1], \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }}"},
		{name: "comments refused", in: "{\n  // mine\n  \"mcpServers\": {}\n}", err: "comments and trailing commas cannot be kept"},
		{name: "servers not an object", in: `{"mcpServers": []}`, err: `"mcpServers" is not an object`},
		{name: "not an object", in: `[1]`, err: "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := setServerEntry([]byte(tt.in), "mcpServers", "nerve", e, tt.remove)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %v\n%s\nwant\n%s", err, got, tt.want)
			}
		})
	}
}
