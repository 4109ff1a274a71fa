package mcpconf

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenEnv is the environment the golden files are expanded with.
var goldenEnv = map[string]string{
	"HOME":    "/home/ana",
	"API_KEY": "sk-test",
	"EMPTY":   "",
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// TestGolden parses every testdata/*.json file (named by its base name, as a
// user would see it) and compares what a user would see — the servers, the
// warnings, each server expanded with goldenEnv, or the error — with
// testdata/*.golden. Run with -update to rewrite the golden files.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in testdata: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(filepath.Base(in), data)
			got := render(cfg, err)
			if strings.HasPrefix(name, "err-") != (err != nil) {
				t.Errorf("err- files must fail and others must parse; got error %v", err)
			}
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run go test -update if the change is right)\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

func render(cfg *Config, err error) string {
	var b bytes.Buffer
	if err != nil {
		fmt.Fprintf(&b, "error:\n%v\n", err)
		return b.String()
	}
	for _, s := range cfg.Servers {
		fmt.Fprintf(&b, "server %q (%s)\n", s.Name, s.Transport)
		renderFields(&b, s, "  ")
		x, err := s.Expand(lookupIn(goldenEnv), cfg.Path)
		if err != nil {
			fmt.Fprintf(&b, "  expand error: %v\n", err)
			continue
		}
		if fmt.Sprint(x) != fmt.Sprint(s) {
			b.WriteString("  expanded:\n")
			renderFields(&b, x, "    ")
		}
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if len(cfg.Servers) == 0 && len(cfg.Warnings) == 0 {
		b.WriteString("no servers\n")
	}
	return b.String()
}

func renderFields(b *bytes.Buffer, s Server, indent string) {
	if s.Command != nil {
		fmt.Fprintf(b, "%scommand: %q\n", indent, s.Command)
	}
	if s.Cwd != "" {
		fmt.Fprintf(b, "%scwd: %q\n", indent, s.Cwd)
	}
	renderMap(b, indent+"env", s.Env)
	if s.URL != "" {
		fmt.Fprintf(b, "%surl: %q\n", indent, s.URL)
	}
	renderMap(b, indent+"headers", s.Headers)
	if s.InheritEnv {
		fmt.Fprintf(b, "%sinheritEnv: true\n", indent)
	}
	if s.Timeout != 0 {
		fmt.Fprintf(b, "%stimeout: %s\n", indent, s.Timeout)
	}
	if s.StartTimeout != 0 {
		fmt.Fprintf(b, "%sstartTimeout: %s\n", indent, s.StartTimeout)
	}
	if s.Disabled {
		fmt.Fprintf(b, "%sdisabled: true\n", indent)
	}
}

func renderMap(b *bytes.Buffer, label string, m map[string]string) {
	if m == nil {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(b, "%s:", label)
	for _, k := range keys {
		fmt.Fprintf(b, " %s=%q", k, m[k])
	}
	b.WriteString("\n")
}

// TestSyntaxErrorShowsTheLine is the example of docs/mcp.md, byte for byte.
func TestSyntaxErrorShowsTheLine(t *testing.T) {
	data := "{\n  \"mcpServers\": {\n    \"fs\": {\n    \"args\": [1, }\n  }\n}\n"
	_, err := Parse(".mcp.json", []byte(data))
	const want = ".mcp.json:4:17: invalid character '}' looking for beginning of value\n" +
		"    \"args\": [1, }\n" +
		"                ^"
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	data := `{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"url": "https://a/mcp"}, "mid": {"command": ["m", "-v"]}}}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range cfg.Servers {
		got = append(got, s.Name+":"+s.Transport)
	}
	if want := "zeta:stdio alpha:http mid:stdio"; strings.Join(got, " ") != want {
		t.Errorf("servers = %v; want file order %s", got, want)
	}
	if cfg.Path != path || len(cfg.Warnings) != 0 {
		t.Errorf("path = %q, warnings = %q", cfg.Path, cfg.Warnings)
	}

	_, err = Load(filepath.Join(dir, "missing.json"))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: err = %v; want a not-exist error naming the file", err)
	}
}

func TestParseAcceptsBOMAndJSONC(t *testing.T) {
	data := "\xef\xbb\xbf{\n// comment with \"quotes\" and ${X}\n\"servers\": {\"a\": {\"command\": \"x // not a comment\", \"args\": [\"/* nor this */\",],},},\n/* block\n comment */}"
	cfg, err := Parse("mcp.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Command; !slices.Equal(got, []string{"x // not a comment", "/* nor this */"}) {
		t.Errorf("command = %q", got)
	}
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/claude-desktop.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(".mcp.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseClaudeCode reads a 5 MB ~/.claude.json: Claude Code keeps
// every project's history beside its servers, and `nerve mcp import` and
// `nerve mcp connect claude-code` read the whole file.
func BenchmarkParseClaudeCode(b *testing.B) {
	var doc strings.Builder
	doc.WriteString(`{"mcpServers": {"a": {"command": "x"}}, "projects": {`)
	for i := range 20000 {
		if i > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, `"/home/u/p%d": {"history": [{"display": "some prompt text that is long enough to be realistic %d", "pastedContents": {}}, {"display": "another one with \"quotes\" and \\n escapes", "x": 1.5e3, "y": true, "z": null}], "allowedTools": ["a","b"]}`, i, i)
	}
	doc.WriteString("}}")
	data := []byte(doc.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(".claude.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParse checks that no input makes Parse panic, that every error names
// the file, and that what parses is consistent.
func FuzzParse(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.json")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, s := range cfg.Servers {
			switch s.Transport {
			case "stdio":
				if len(s.Command) == 0 || s.URL != "" {
					t.Fatalf("stdio server %+v", s)
				}
			case "http", "sse":
				if s.URL == "" || s.Command != nil {
					t.Fatalf("%s server %+v", s.Transport, s)
				}
			default:
				t.Fatalf("transport %q", s.Transport)
			}
		}
		for _, w := range cfg.Warnings {
			if !strings.HasPrefix(w, "f.json:") {
				t.Fatalf("warning does not name the file: %s", w)
			}
		}
	})
}

// Issue 21: a config nesting past encoding/json's limit, and one over the
// size limit, are errors naming the limit.
func TestConfigLimits(t *testing.T) {
	deep := `{"mcpServers": {"a": {"command": "x", "args": ` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}}}`
	_, err := Parse("deep.json", []byte(deep))
	if err == nil || !strings.Contains(err.Error(), "nests more than 10000 deep (the limit") {
		t.Errorf("a config nesting 1,000,000 deep: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, append([]byte(`{"mcpServers": {}, "x": "`), bytes.Repeat([]byte("a"), MaxConfigSize)...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big)
	if err == nil || !strings.Contains(err.Error(), "the limit for an MCP config") {
		t.Errorf("a config over %d bytes: %v", MaxConfigSize, err)
	}
}
