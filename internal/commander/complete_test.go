package commander

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var testCommands = []CommandSpec{
	{Name: "node", Subcommands: []CommandSpec{
		{Name: "add", Args: []ArgSpec{{Name: "KIND", Values: []string{"bash", "mcp", "claude", "llm", "graph", "identity"}}, {Name: "NAME"}},
			Flags: []FlagSpec{{Name: "--cwd", TakesValue: true}, {Name: "--url", TakesValue: true}, {Name: "--transport", TakesValue: true, Values: []string{"stdio", "http", "sse"}}}},
		{Name: "ls", Flags: []FlagSpec{{Name: "--json"}}},
		{Name: "info", Args: []ArgSpec{{Name: "NAME", Node: true}}},
		{Name: "rm", Args: []ArgSpec{{Name: "NAME", Node: true}}},
		{Name: "restart", Args: []ArgSpec{{Name: "NAME", Node: true}}},
	}},
	{Name: "help", Args: []ArgSpec{{Name: "COMMAND", Values: []string{"node", "help", "quit", "tools"}}}},
	{Name: "quit"},
	{Name: "tools", Args: []ArgSpec{{Name: "NODE", Node: true}}, Flags: []FlagSpec{{Name: "--json"}}},
}

func TestComplete(t *testing.T) {
	cat := testCatalog()
	tests := []struct {
		line    string
		pos     int // -1: end of line
		want    []string
		replace int
	}{
		{"", -1, []string{"@bash ", "@echo ", "@fs ", "@fs-cache ", "@graph ", "@pending "}, 0},
		{"@", -1, []string{"@bash ", "@echo ", "@fs ", "@fs-cache ", "@graph ", "@pending "}, 1},
		{"@f", -1, []string{"@fs ", "@fs-cache "}, 2},
		{"@fs-", -1, []string{"@fs-cache "}, 4},
		{"@zz", -1, nil, 0},
		{"@fs ", -1, []string{"config ", "files.read ", "list_directory ", "ping ", "read_file ", "search ", "write_file "}, 0},
		{"@fs r", -1, []string{"read_file "}, 1},
		{"@fs.w", -1, []string{"@fs.write_file "}, 5},
		{"@fs.files", -1, []string{"@fs.files.read "}, 9},
		{"@fs read_file ", -1, []string{"head=", "path=", "tail="}, 0},
		{"@fs read_file path=/a ", -1, []string{"head=", "tail="}, 0},
		{"@fs read_file path=/a t", -1, []string{"tail="}, 1},
		{"@fs.read_file p", -1, []string{"path="}, 1},
		{"@fs config mode=", -1, []string{"fast ", "slow "}, 0},
		{"@fs config mode=s", -1, []string{"slow "}, 1},
		{"@fs config verbose=", -1, []string{"false ", "true "}, 0},
		{"@fs config level=", -1, []string{"1 ", "2 ", "3 "}, 0},
		{`@fs read_file {"pa`, -1, nil, 0},
		{`@fs write_file content="a b`, -1, nil, 0},
		{"@bash ", -1, nil, 0},
		{"@bash l", -1, nil, 0},
		{"@fs r and more after the cursor", 5, []string{"read_file "}, 1},
		{":", -1, []string{":help ", ":node ", ":quit ", ":tools "}, 1},
		{":n", -1, []string{":node "}, 2},
		{":node ", -1, []string{"add ", "info ", "ls ", "restart ", "rm "}, 0},
		{":node add ", -1, []string{"bash ", "claude ", "graph ", "identity ", "llm ", "mcp "}, 0},
		{":node add m", -1, []string{"mcp "}, 1},
		{":node add mcp x --", -1, []string{"--cwd ", "--transport ", "--url "}, 2},
		{":node add mcp x --transport ", -1, []string{"http ", "sse ", "stdio "}, 0},
		{":node add --cwd /srv ", -1, []string{"bash ", "claude ", "graph ", "identity ", "llm ", "mcp "}, 0},
		{":node info ", -1, []string{"bash ", "echo ", "fs ", "fs-cache ", "graph ", "pending "}, 0},
		{":node info f", -1, []string{"fs ", "fs-cache "}, 1},
		{":help n", -1, []string{"node "}, 1},
		{":tools --j", -1, []string{"--json "}, 3},
		{":bogus ", -1, nil, 0},
		{"plain text", -1, nil, 0},
		{"@fß", -1, nil, 0},
		{"  @f", -1, []string{"@fs ", "@fs-cache "}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			pos := tc.pos
			if pos < 0 {
				pos = len([]rune(tc.line))
			}
			got, n := Complete(tc.line, pos, cat, testCommands)
			if !slices.Equal(got, tc.want) || n != tc.replace {
				t.Errorf("Complete(%q, %d) = %q, %d; want %q, %d", tc.line, pos, got, n, tc.want, tc.replace)
			}
			// readline wants the suffix after the typed word: every
			// candidate must start with the runes it replaces.
			typed := string([]rune(tc.line)[pos-n : pos])
			for _, c := range got {
				if !strings.HasPrefix(c, typed) {
					t.Errorf("candidate %q does not start with the replaced %q", c, typed)
				}
			}
		})
	}
}

// TestCompleteAnyCatalog checks a Catalog that is not an Index gets the
// same answers.
func TestCompleteAnyCatalog(t *testing.T) {
	got, n := Complete("@fs r", 5, plainCatalog{testCatalog()}, nil)
	if !slices.Equal(got, []string{"read_file "}) || n != 1 {
		t.Errorf("got %q, %d", got, n)
	}
}

type plainCatalog struct{ ix *Index }

func (p plainCatalog) Nodes() []string                          { return p.ix.Nodes() }
func (p plainCatalog) Tools(node string) ([]*mcp.Tool, bool)    { return p.ix.Tools(node) }
func (p plainCatalog) Tool(node, name string) (*mcp.Tool, bool) { return p.ix.Tool(node, name) }

func TestIncomplete(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{`@fs read_file {"path": "/a"}`, false},
		{`@fs read_file {"path": "/a"`, true},
		{`@fs read_file {`, true},
		{"@fs read_file {\n\"path\": \"/a\",", true},
		{"@fs read_file {\n\"path\": \"/a\"\n}", false},
		{`@fs read_file {"path": "a}`, true}, // the brace is inside a string
		{`@fs read_file {"path": "a\"}"}`, false},
		{`@fs config ids=[1,`, true},
		{`@fs config opts={"a":`, true},
		{`@bash echo {`, true},
		{"@bash f() {", true},
		{"@bash f() {\n echo hi\n}", false},
		{`@bash echo "{"`, false},
		{`@bash echo a{b`, false},
		{`@bash echo [`, false},
		{`@claude what's {up`, false},
		{`:node add "x {`, false},
		{`hello {`, false},
		{``, false},
	}
	for _, tc := range tests {
		if got := Incomplete(tc.text); got != tc.want {
			t.Errorf("Incomplete(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	cands := []string{"read_file", "write_file", "list_directory", "search", "fs", "bash"}
	tests := []struct{ name, want string }{
		{"red_file", "read_file"},
		{"raed_file", "read_file"},
		{"READ_FILE", "read_file"},
		{"wirte_file", "write_file"},
		{"list", "list_directory"},
		{"fss", "fs"},
		{"bsh", "bash"},
		{"zzz", ""},
		{"", ""},
		{"searchfiles", "search"},
	}
	for _, tc := range tests {
		if got := DidYouMean(tc.name, cands); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHistoryRefs(t *testing.T) {
	h := testHistory()
	for _, tc := range []struct {
		line, want string
	}{
		{"@echo :::3 and :::1", `{"text":"42 and hello"}`},
		{"@echo :::fs[-1]/:::fs[-2]", `{"text":"42/hello"}`},
	} {
		ln, err := Parse(tc.line, testCatalog(), h)
		if err != nil || string(ln.Args) != tc.want {
			t.Errorf("Parse(%q) = %s, %v; want %s", tc.line, ln.Args, err, tc.want)
		}
	}
	var none *History
	if _, err := Parse("@echo :::1", testCatalog(), none); err == nil || err.Error() != ":::1: no block yet — each result gets a block number as it arrives" {
		t.Errorf("nil *History: %v", err)
	}
	if _, err := Parse("@echo :::1", testCatalog(), nil); err == nil {
		t.Error("a reference without history should fail")
	}
	if _, err := Parse("@echo :::1", testCatalog(), &History{}); err == nil || err.Error() != ":::1: no block yet — each result gets a block number as it arrives" {
		t.Errorf("empty history: %v", err)
	}
}
