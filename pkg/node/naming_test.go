package node

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var llmNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestLLMName(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5) // 100 characters
	tests := []struct {
		node, tool string
		want       string // "" when checked by pattern only
		prefix     string
	}{
		{node: "fs", tool: "read_file", want: "fs__read_file"},
		{node: "gh", tool: "create-issue", want: "gh__create-issue"},
		{node: "x", tool: "a.b", want: "x__a_b"},
		{node: "x", tool: "Get Weather!", want: "x__Get_Weather_"},
		{node: "x", tool: "héllo wörld", want: "x__h_llo_w_rld"},
		{node: "x", tool: "日本語", want: "x_____"},
		{node: "x", tool: "", want: "x__"},
		{node: strings.Repeat("n", 63), tool: "t", prefix: strings.Repeat("n", 53) + "_"},
		{node: "mcp", tool: long, prefix: ("mcp__" + long)[:53] + "_"},
	}
	for _, tt := range tests {
		got := LLMName(tt.node, tt.tool)
		if !llmNamePattern.MatchString(got) || !ValidLLMName(got) {
			t.Errorf("LLMName(%q, %q) = %q, not a valid LLM name", tt.node, tt.tool, got)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("LLMName(%q, %q) = %q, want %q", tt.node, tt.tool, got, tt.want)
		}
		if tt.prefix != "" {
			if len(got) != MaxLLMNameLen || !strings.HasPrefix(got, tt.prefix) {
				t.Errorf("LLMName(%q, %q) = %q, want 64 characters starting %q", tt.node, tt.tool, got, tt.prefix)
			}
			if !regexp.MustCompile(`_[0-9a-f]{10}$`).MatchString(got) {
				t.Errorf("LLMName(%q, %q) = %q, want it to end in _ and a 10-digit hash", tt.node, tt.tool, got)
			}
		}
	}
}

// TestLLMNameLongNotCut checks that names over 64 characters are told
// apart by a hash even when they differ only at the end.
func TestLLMNameLongNotCut(t *testing.T) {
	stem := strings.Repeat("x", 80)
	a, b := LLMName("n", stem+"_read"), LLMName("n", stem+"_write")
	if a == b {
		t.Fatalf("long names that differ at the end share the LLM name %q", a)
	}
	if LLMName("n", stem+"_read") != a {
		t.Error("LLMName is not deterministic")
	}
	// Exactly 64 is left alone.
	tool := strings.Repeat("t", 64-len("n__"))
	if got := LLMName("n", tool); got != "n__"+tool {
		t.Errorf("64-character name changed to %q", got)
	}
	if got := LLMName("n", tool+"t"); len(got) != 64 || got == "n__"+tool {
		t.Errorf("65-character name became %q, want a 64-character hash form", got)
	}
}

func TestSplitQualified(t *testing.T) {
	tests := []struct {
		in         string
		node, tool string
		ok         bool
	}{
		{"fs.read_file", "fs", "read_file", true},
		{"x.a.b", "x", "a.b", true}, // MCP tool names may contain dots
		{"x..b", "x", ".b", true},
		{"fs", "", "", false},
		{".tool", "", "", false},
		{"node.", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		node, tool, ok := SplitQualified(tt.in)
		if node != tt.node || tool != tt.tool || ok != tt.ok {
			t.Errorf("SplitQualified(%q) = %q, %q, %v; want %q, %q, %v", tt.in, node, tool, ok, tt.node, tt.tool, tt.ok)
		}
		if ok && QualifiedName(node, tool) != tt.in {
			t.Errorf("QualifiedName(%q, %q) = %q, want %q", node, tool, QualifiedName(node, tool), tt.in)
		}
	}
}

func tools(names ...string) []*mcp.Tool {
	ts := make([]*mcp.Tool, len(names))
	for i, n := range names {
		ts[i] = &mcp.Tool{Name: n}
	}
	return ts
}

func llmNames(ts *Toolset) map[string]string {
	m := map[string]string{}
	for _, e := range ts.Tools() {
		m[e.Qualified] = e.LLMName
	}
	return m
}

func checkToolset(t *testing.T, ts *Toolset) {
	t.Helper()
	seen := map[string]string{}
	for _, e := range ts.Tools() {
		if !llmNamePattern.MatchString(e.LLMName) {
			t.Errorf("%s: LLM name %q is not valid", e.Qualified, e.LLMName)
		}
		if other, dup := seen[e.LLMName]; dup {
			t.Errorf("%s and %s share the LLM name %q", other, e.Qualified, e.LLMName)
		}
		seen[e.LLMName] = e.Qualified
		for _, name := range []string{e.Qualified, e.LLMName} {
			got, ok := ts.Lookup(name)
			if !ok || got.Qualified != e.Qualified || got.Tool != e.Tool {
				t.Errorf("Lookup(%q) = %q, %v; want %q", name, got.Qualified, ok, e.Qualified)
			}
			node, tool, ok := ts.Resolve(name)
			if !ok || node != e.Node || tool != e.Tool.Name {
				t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", name, node, tool, ok, e.Node, e.Tool.Name)
			}
		}
	}
}

func TestToolsetCollisions(t *testing.T) {
	tests := []struct {
		name  string
		nodes []NodeTools
		// plain are the tools that keep LLMName; every other one must
		// have the hash form.
		plain []string
	}{
		{
			name:  "no collision",
			nodes: []NodeTools{{Node: "fs", Tools: tools("read_file", "write_file")}, {Node: "sh", Tools: tools("bash")}},
			plain: []string{"fs.read_file", "fs.write_file", "sh.bash"},
		},
		{
			name:  "dot and underscore",
			nodes: []NodeTools{{Node: "x", Tools: tools("a.b", "a_b", "a-b")}},
			plain: []string{"x.a-b"},
		},
		{
			name:  "unicode",
			nodes: []NodeTools{{Node: "x", Tools: tools("café", "cafè", "caf_")}},
		},
		{
			name: "across nodes",
			// "a_" + "__" + "_b" and "a" + "__" + "__b" are both a____b.
			nodes: []NodeTools{{Node: "a_", Tools: tools("_b")}, {Node: "a", Tools: tools("__b", "c")}},
			plain: []string{"a.c"},
		},
		{
			name: "long names with a common prefix",
			nodes: []NodeTools{{Node: "n", Tools: tools(
				strings.Repeat("p", 70)+"1", strings.Repeat("p", 70)+"2", strings.Repeat("p", 70)+"3")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := NewToolset(tt.nodes)
			checkToolset(t, ts)
			for _, e := range ts.Tools() {
				wantPlain := false
				for _, p := range tt.plain {
					wantPlain = wantPlain || p == e.Qualified
				}
				plain := LLMName(e.Node, e.Tool.Name)
				if wantPlain && e.LLMName != plain {
					t.Errorf("%s: LLM name %q, want %q", e.Qualified, e.LLMName, plain)
				}
				if !wantPlain && !regexp.MustCompile(`_[0-9a-f]{10,}$`).MatchString(e.LLMName) {
					t.Errorf("%s: LLM name %q, want the hash form", e.Qualified, e.LLMName)
				}
			}
		})
	}
}

// TestToolsetHashMeetsPlain: a tool literally named like the hash form of
// two colliding tools still ends up with a name of its own.
func TestToolsetHashMeetsPlain(t *testing.T) {
	first := NewToolset([]NodeTools{{Node: "x", Tools: tools("a.b", "a_b")}})
	hashed, _ := first.Lookup("x.a.b")
	impostor := strings.TrimPrefix(hashed.LLMName, "x__")
	ts := NewToolset([]NodeTools{{Node: "x", Tools: tools("a.b", "a_b", impostor)}})
	checkToolset(t, ts)
	if len(ts.Tools()) != 3 {
		t.Fatalf("got %d tools, want 3", len(ts.Tools()))
	}
}

func TestToolsetDeterministic(t *testing.T) {
	names := []string{"a.b", "a_b", "a-b", "a b", "é", "_", ".", strings.Repeat("z", 90), strings.Repeat("z", 89) + ".", "read_file"}
	build := func(r *rand.Rand) *Toolset {
		nodes := []NodeTools{{Node: "x"}, {Node: "x_"}, {Node: "y"}}
		for i := range nodes {
			ns := append([]string(nil), names...)
			r.Shuffle(len(ns), func(a, b int) { ns[a], ns[b] = ns[b], ns[a] })
			nodes[i].Tools = tools(ns...)
		}
		r.Shuffle(len(nodes), func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
		return NewToolset(nodes)
	}
	want := llmNames(build(rand.New(rand.NewPCG(1, 1))))
	for seed := uint64(2); seed < 30; seed++ {
		ts := build(rand.New(rand.NewPCG(seed, seed)))
		checkToolset(t, ts)
		got := llmNames(ts)
		for q, n := range want {
			if got[q] != n {
				t.Fatalf("seed %d: %s is %q, was %q with another order", seed, q, got[q], n)
			}
		}
	}
}

// TestToolsetRandomNames throws many names from a small alphabet at the
// Toolset so that collisions are common.
func TestToolsetRandomNames(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []rune("ab._- é")
	var nodes []NodeTools
	for n := 0; n < 5; n++ {
		var names []string
		for i := 0; i < 200; i++ {
			var b strings.Builder
			for j := 0; j < 1+r.IntN(4); j++ {
				b.WriteRune(alphabet[r.IntN(len(alphabet))])
			}
			if r.IntN(10) == 0 {
				b.WriteString(strings.Repeat("q", 60))
			}
			names = append(names, b.String())
		}
		nodes = append(nodes, NodeTools{Node: fmt.Sprintf("n%d", n), Tools: tools(names...)})
	}
	ts := NewToolset(nodes)
	checkToolset(t, ts)
}

func TestToolsetRouting(t *testing.T) {
	read := &mcp.Tool{Name: "read_file"}
	dotted := &mcp.Tool{Name: "repo.list"}
	first := &mcp.Tool{Name: "bash"}
	ts := NewToolset([]NodeTools{
		{Node: "fs", Tools: []*mcp.Tool{read, nil}},
		{Node: "gh", Tools: []*mcp.Tool{dotted}},
		{Node: "sh", Tools: []*mcp.Tool{first, {Name: "bash"}}}, // listed twice: the first wins
	})
	tests := []struct {
		name       string
		node, tool string
		want       *mcp.Tool
	}{
		{"fs.read_file", "fs", "read_file", read},
		{"fs__read_file", "fs", "read_file", read},
		{"gh.repo.list", "gh", "repo.list", dotted},
		{"gh__repo_list", "gh", "repo.list", dotted},
		{"sh.bash", "sh", "bash", first},
		{"sh__bash", "sh", "bash", first},
		{"fs.write_file", "", "", nil},
		{"fs__write_file", "", "", nil},
		{"gh.repo_list", "", "", nil}, // the LLM name's characters under the qualified form
		{"read_file", "", "", nil},
		{"", "", "", nil},
	}
	for _, tt := range tests {
		e, ok := ts.Lookup(tt.name)
		if ok != (tt.want != nil) || e.Tool != tt.want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", tt.name, e.Tool, ok, tt.want)
		}
		node, tool, ok := ts.Resolve(tt.name)
		if node != tt.node || tool != tt.tool || ok != (tt.want != nil) {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", tt.name, node, tool, ok, tt.node, tt.tool)
		}
	}
	var order []string
	for _, e := range ts.Tools() {
		order = append(order, e.Qualified)
	}
	if got, want := strings.Join(order, " "), "fs.read_file gh.repo.list sh.bash"; got != want {
		t.Errorf("tools in order %q, want %q", got, want)
	}
	if ts.Len() != 3 {
		t.Errorf("Len() = %d, want 3", ts.Len())
	}

	var empty *Toolset
	if _, ok := empty.Lookup("fs.read_file"); ok || empty.Len() != 0 || empty.Tools() != nil {
		t.Error("a nil Toolset is not empty")
	}
	if got := NewToolset(nil); got.Len() != 0 {
		t.Errorf("NewToolset(nil) has %d tools", got.Len())
	}
}

// TestToolsetOf: a flat listing, its nodes interleaved, becomes the
// Toolset NewToolset builds from the nodes in the order each first comes
// in, each node's tools in the order they came.
func TestToolsetOf(t *testing.T) {
	flat := []struct {
		node, tool string
	}{{"b", "x"}, {"a", "y"}, {"b", "z"}, {"a", "w"}}
	got := ToolsetOf(func(yield func(string, *mcp.Tool) bool) {
		for _, f := range flat {
			if !yield(f.node, &mcp.Tool{Name: f.tool}) {
				return
			}
		}
	})
	var names []string
	for _, e := range got.Tools() {
		names = append(names, e.Qualified)
	}
	if want := "b.x b.z a.y a.w"; strings.Join(names, " ") != want {
		t.Errorf("ToolsetOf: %v, want %s", names, want)
	}
}
