package mcpconf

import "testing"

// TestSource: each server knows the file and line it is written on, and
// its node's spec keeps them (issue 27: a runtime error names them).
func TestSource(t *testing.T) {
	data := []byte(`{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"]},

    "api": {
      "url": "https://api.example.com/mcp"
    }
  },
  "servers": [
    {"command": "uvx", "args": ["mcp-server-time"]}
  ]
}`)
	cfg, err := Parse("/p/.mcp.json", data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"fs": 3, "api": 5, "mcp-server-time": 10}
	for _, s := range cfg.Servers {
		if s.Source == nil || s.Source.File != "/p/.mcp.json" || s.Source.Line != want[s.Name] || s.Source.Server != s.Name {
			t.Errorf("server %q: source %+v, want /p/.mcp.json line %d", s.Name, s.Source, want[s.Name])
		}
		back, _, err := ServerFromSpec(s.Spec(s.Name))
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Source.String(); got != s.Source.String() {
			t.Errorf("server %q: source through its spec %q, want %q", s.Name, got, s.Source)
		}
	}
	if len(cfg.Servers) != 3 {
		t.Fatalf("%d servers, want 3", len(cfg.Servers))
	}
}
