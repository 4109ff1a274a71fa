package clientconf

import (
	"strings"
	"testing"
)

func TestNodeID(t *testing.T) {
	tests := []struct{ name, want string }{
		{"github", "github"},
		{"GitHub", "github"},
		{"my server!", "my-server-"},
		{"@scope/pkg", "scope-pkg"},
		{"___", "mcp"},
		{"é", "mcp"},
		{strings.Repeat("a", 80), strings.Repeat("a", 63)},
	}
	for _, tt := range tests {
		if got := NodeID(tt.name); got != tt.want {
			t.Errorf("NodeID(%q) = %q; want %q", tt.name, got, tt.want)
		}
	}
	used := map[string]bool{}
	var got []string
	for _, id := range []string{"a", "a", "a", strings.Repeat("b", 63), strings.Repeat("b", 63)} {
		got = append(got, UniqueID(id, used))
	}
	want := []string{"a", "a-2", "a-3", strings.Repeat("b", 63), strings.Repeat("b", 61) + "-2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("UniqueID: %v; want %v", got, want)
	}
}
