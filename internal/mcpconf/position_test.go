package mcpconf

import (
	"strings"
	"testing"
)

// TestJSONAsEncodingJSONReadsIt: what JSON allows and a YAML parser
// refuses or reads differently (issue 26) reads as encoding/json reads it,
// and places after it are counted as JSON counts lines.
func TestJSONAsEncodingJSONReadsIt(t *testing.T) {
	data := "{\"mcpServers\": {\"a\": {\n" +
		"  \"command\": \"run\",\n" +
		"  \"env\": {\"EMOJI\": \"\\ud83d\\ude00\", \"SLASH\": \"a\\/b\", \"BAD\": \"\\ud800\", \"DEL\": \"x\x7fy\", \"NEL\": \"x\u0085y\u2028z\", \"UTF8\": \"x\xffy\"},\n" +
		"  \"args\"\n  : [\"" + strings.Repeat("k", 2000) + "\"],\n" +
		"  \"cwd\": \"first\", \"cwd\": \"last\",\r  \"cmd\": 1\n" +
		"}}}"
	cfg, err := Parse("f.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	want := map[string]string{"EMOJI": "😀", "SLASH": "a/b", "BAD": "\ufffd", "DEL": "x\x7fy", "NEL": "x\u0085y\u2028z", "UTF8": "x\ufffdy"}
	for k, v := range want {
		if s.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, s.Env[k], v)
		}
	}
	if len(s.Command) != 2 || len(s.Command[1]) != 2000 {
		t.Errorf("a key before a line break, a 2000-byte argument: command = %.40q", s.Command)
	}
	if s.Cwd != "last" {
		t.Errorf("a key written twice: cwd = %q, want the last one", s.Cwd)
	}
	// A lone CR is not a line break in JSON; U+0085 and U+2028 in a string
	// are not either.
	if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0], "f.json:6:36: server \"a\": unknown key \"cmd\"") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

// TestJSONCErrors: a file with comments and a mistake is told where the
// mistake is, not where the first comment is.
func TestJSONCErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"mistake after a comment", "{\n  // my servers\n  \"mcpServers\": {\"a\": {\"command\": \"x\" \"args\": []}}\n}",
			"f.json:3:39: invalid character '\"' after object value (expecting ',' or '}')"},
		{"mistake after a trailing comma", "{\"mcpServers\": {\"a\": {\"command\": \"x\",},\n \"b\": {\"command\": tru}}}",
			"f.json:2:19: invalid literal: tru"},
		{"mistake before any comment", "{\"mcpServers\": {\"a\": {\"command\": \"x\" \"args\": []}}} // end",
			"f.json:1:38: invalid character '\"' after object key:value pair"},
		{"comments only", "// nothing yet\n/* no */\n", "f.json: the file is empty"},
		{"comment not closed", "{\"mcpServers\": {}, /* gone\n}", "f.json:1:20: a comment is not closed: end it with */"},
		{"cut short", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, // b\n", "f.json:1:44: unexpected end of JSON input (is a closing } or ] missing?)"},
		{"deep", "// deep\n" + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000),
			"f.json:1:1: invalid character '/' looking for beginning of value (comments and trailing commas are read in files of up to 10000 brackets)"},
	}
	for _, tt := range tests {
		_, err := Parse("f.json", []byte(tt.data))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: got\n%v\nwant it to start with\n%s", tt.name, err, tt.want)
		}
	}
}
