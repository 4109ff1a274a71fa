package clientconf

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

var entry = Entry{Command: "/bin/nerve", Args: []string{"mcp", "serve"}}

func TestSetEntry(t *testing.T) {
	for _, tt := range []struct {
		name, in, want, err string
		remove              []string
	}{
		{name: "empty", in: "", want: "{\n  \"mcpServers\": {\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n"},
		{name: "no servers key", in: "{\n\t\"a\": 1\n}\n", want: "{\n\t\"a\": 1,\n\t\"mcpServers\": {\n\t\t\"nerve\": {\n\t\t\t\"command\": \"/bin/nerve\",\n\t\t\t\"args\": [\n\t\t\t\t\"mcp\",\n\t\t\t\t\"serve\"\n\t\t\t]\n\t\t}\n\t}\n}\n"},
		{name: "empty object", in: "{}", want: "{\n  \"mcpServers\": {\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}"},
		{name: "empty servers", in: "{\n  \"mcpServers\": {}\n}\n", want: "{\n  \"mcpServers\": {\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n"},
		{name: "same entry: unchanged", in: `{"mcpServers": {"nerve": {"args": ["mcp", "serve"], "command": "/bin/nerve"}}}`, want: `{"mcpServers": {"nerve": {"args": ["mcp", "serve"], "command": "/bin/nerve"}}}`},
		{name: "same entry with comments: unchanged", in: "{\"mcpServers\": {\"nerve\": {/* mine */ \"args\": [\"mcp\", \"serve\",], \"command\": \"/bin/nerve\"}}}",
			want: "{\"mcpServers\": {\"nerve\": {/* mine */ \"args\": [\"mcp\", \"serve\",], \"command\": \"/bin/nerve\"}}}"},
		{name: "one line: stale entry replaced, others kept, moved removed", in: `{"x": [1], "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "nerve": {"command": "/old/nerve"}}}`,
			remove: []string{"b"},
			want:   `{"x": [1], "mcpServers": {"a": {"command": "a"}, "nerve": {"command":"/bin/nerve","args":["mcp","serve"]}}}`},
		{name: "one line: added", in: `{"mcpServers": {"a": {"command": "a"}}}`,
			want: `{"mcpServers": {"a": {"command": "a"}, "nerve": {"command":"/bin/nerve","args":["mcp","serve"]}}}`},
		{name: "last removed: no trailing comma left", in: "{\n  \"mcpServers\": {\n    \"nerve\": {\"command\": \"/bin/nerve\", \"args\": [\"mcp\", \"serve\"]},\n    \"b\": {\"command\": \"b\"}\n  }\n}\n",
			remove: []string{"b"},
			want:   "{\n  \"mcpServers\": {\n    \"nerve\": {\"command\": \"/bin/nerve\", \"args\": [\"mcp\", \"serve\"]}\n  }\n}\n"},
		{name: "removed with its comment, trailing comma kept", in: "{\n  \"mcpServers\": {\n    // b's server\n    \"b\": {\"command\": \"b\"},\n    \"c\": {\"command\": \"c\"},\n  },\n}\n",
			remove: []string{"b", "c"},
			want:   "{\n  \"mcpServers\": {\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    },\n  },\n}\n"},
		{name: "a comment after the last member stays on its line", in: "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"} // mine\n  }\n}\n",
			want: "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}, // mine\n    \"nerve\": {\n      \"command\": \"/bin/nerve\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n"},
		{name: "byte-order mark kept", in: "\xef\xbb\xbf{\"mcpServers\": {\"a\": {}}}", want: "\xef\xbb\xbf{\"mcpServers\": {\"a\": {}, \"nerve\": {\"command\":\"/bin/nerve\",\"args\":[\"mcp\",\"serve\"]}}}"},
		{name: "servers not an object", in: `{"mcpServers": []}`, err: `c.json: "mcpServers" is not an object`},
		{name: "not an object", in: `[1]`, err: "c.json: the file is not a JSON object"},
		{name: "not JSONC", in: "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}\n    \"b\": {}\n  }\n}\n", err: "c.json:4:5: not JSON (nor JSON with comments): invalid character '\"' after object value (expecting ',' or '}')"},
		{name: "unterminated comment", in: "{\n  /* mine\n}\n", err: "c.json:2:3: not JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetEntry("c.json", []byte(tt.in), "mcpServers", "nerve", entry, tt.remove)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %v\n%s\nwant\n%s", err, got, tt.want)
			}
			mustRead(t, bytes.TrimPrefix(got, []byte(bom)), "mcpServers")
		})
	}
}

// vscodeEntry is what connect inserts into testdata/vscode.jsonc (a VS
// Code user mcp.json as people write them: line and block comments,
// trailing commas, odd indentation, other servers and inputs, text beyond
// ASCII), in one piece:
// every other byte of the file stays where it was.
const vscodeEntry = `		"nerve": {
			"type": "stdio",
			"command": "/bin/nerve",
			"args": [
				"mcp",
				"serve"
			]
		},
`

func TestSetEntryKeepsComments(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "vscode.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	vscodeJSONC := string(b)
	e := entry
	e.Type = "stdio"
	got, err := SetEntry("mcp.json", b, "servers", "nerve", e, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(vscodeJSONC, "\t},\n\t\"inputs\"")
	want := vscodeJSONC[:at] + vscodeEntry + vscodeJSONC[at:]
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	cfg := mustRead(t, got, "servers")
	if len(cfg.Servers) != 3 || cfg.Servers[2].Name != "nerve" || cfg.Servers[2].Runs() != "/bin/nerve mcp serve" {
		t.Errorf("nerve's reader sees %+v", cfg.Servers)
	}

	// Again: nothing changes. A newer nerve elsewhere: only its entry does.
	if again, err := SetEntry("mcp.json", got, "servers", "nerve", e, nil); err != nil || string(again) != string(got) {
		t.Errorf("a second connect changed the file (%v):\n%s", err, again)
	}
	e.Command = "/opt/nerve"
	moved, err := SetEntry("mcp.json", got, "servers", "nerve", e, nil)
	if want := strings.Replace(string(got), "/bin/nerve", "/opt/nerve", 1); err != nil || string(moved) != want {
		t.Errorf("a new path: %v\n%s\nwant\n%s", err, moved, want)
	}

	// --move: the moved server goes with the comment before it.
	gone, err := SetEntry("mcp.json", got, "servers", "nerve", entry, []string{"github"})
	if err != nil {
		t.Fatal(err)
	}
	block := vscodeJSONC[strings.Index(vscodeJSONC, "\t\t// GitHub"):strings.Index(vscodeJSONC, "      \"café")]
	if want := strings.Replace(strings.Replace(string(got), block, "", 1), "\t\t\t\"type\": \"stdio\",\n", "", 1); string(gone) != want {
		t.Errorf("after moving github:\n%s\nwant\n%s", gone, want)
	}
	mustRead(t, gone, "servers")
}

// mustRead checks that data is still JSONC that nerve's reader and
// encoding/json (comments stripped) read, with nerve's entry under key.
func mustRead(t *testing.T, data []byte, key string) *Servers {
	t.Helper()
	std, err := hujson.Standardize(bytes.Clone(data)) // it works in place
	if err != nil {
		t.Fatalf("the result is not JSONC: %v\n%s", err, data)
	}
	var v map[string]json.RawMessage
	var servers map[string]Entry
	if err := json.Unmarshal(std, &v); err != nil || json.Unmarshal(v[key], &servers) != nil {
		t.Fatalf("the result is not JSON once its comments are gone: %v\n%s", err, std)
	}
	if got := servers["nerve"]; got.Command == "" {
		t.Fatalf("no nerve entry under %q:\n%s", key, data)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	cfg, err := Parse(path, data)
	if err != nil {
		t.Fatalf("nerve's reader: %v\n%s", err, data)
	}
	return cfg
}

// TestSetEntryDeepFile: a file nested far past any real config is refused
// with a message, not read until the stack overflows (which ends the
// process: found by review, 2M levels).
func TestSetEntryDeepFile(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"plain", `{"a":` + strings.Repeat("[", 2_000_000) + strings.Repeat("]", 2_000_000) + `}`},
		{"jsonc", "// c\n{\"a\":" + strings.Repeat("[", 2_000_000) + strings.Repeat("]", 2_000_000) + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SetEntry("deep.json", []byte(tc.data), "mcpServers", "nerve", map[string]any{"command": "nerve"}, nil)
			if err == nil || !strings.Contains(err.Error(), "deep.json") {
				t.Fatalf("SetEntry = %v, want an error naming the file", err)
			}
		})
	}
}
