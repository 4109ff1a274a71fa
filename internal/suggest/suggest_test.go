package suggest

import "testing"

// TestDistance checks the edit distance Closest counts (osa, unbounded).
func TestDistance(t *testing.T) {
	distance := func(a, b string) int {
		var buf [3][]int
		return osa(a, b, 1<<30, &buf)
	}
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"read_file", "read_file", 0},
		{"red_file", "read_file", 1},   // deletion
		{"reaad_file", "read_file", 1}, // insertion
		{"rexd_file", "read_file", 1},  // substitution
		{"raed_file", "read_file", 1},  // swap of neighbours
		{"kitten", "sitting", 3},
		{"Path", "path", 1}, // case sensitive
		{"fß", "fs", 1},     // runes, not bytes
		{"ca", "abc", 3},    // OSA: no edit of a swapped pair
	}
	for _, tt := range tests {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := distance(tt.b, tt.a); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestLimit(t *testing.T) {
	for name, want := range map[string]int{"": 1, "ab": 1, "fss": 1, "ecko": 1, "identiti": 2, "read_fileee": 3, "a_very_long_tool_name": 4, "ßßßßßß": 2} {
		if got := Limit(name); got != want {
			t.Errorf("Limit(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestClosest(t *testing.T) {
	tools := []string{"read_file", "write_file", "list_directory", "search", "fs", "bash"}
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		// The Commander's cases (internal/commander).
		{"red_file", tools, "read_file"},
		{"raed_file", tools, "read_file"},
		{"READ_FILE", tools, "read_file"},
		{"wirte_file", tools, "write_file"},
		{"list", tools, "list_directory"},
		{"fss", tools, "fs"},
		{"bsh", tools, "bash"},
		{"zzz", tools, ""},
		{"", tools, ""},
		{"searchfiles", tools, "search"},
		// The session's, the command line's and the validator's.
		{"ecko", []string{"identity", "echo"}, "echo"},
		{"identiti", []string{"identity", "echo"}, "identity"},
		{"lss", []string{"add", "ls", "info", "rm", "restart"}, "ls"},
		{"pth", []string{"path"}, "path"},
		{"newtext", []string{"newText", "oldText"}, "newText"},
		// Config keys (internal/mcpconf).
		{"commmand", []string{"type", "command", "args", "env", "cwd", "url", "headers"}, "command"},
		{"autoApprove", []string{"type", "command", "args", "env", "cwd", "url", "headers"}, ""},
		// Two letters never stand for two others; no candidates, no answer.
		{"xy", []string{"fs"}, ""},
		{"fs", nil, ""},
		{"fs", []string{""}, ""},
		// Equally near: the one that sorts first, whatever the order given.
		{"cat", []string{"hat", "bat"}, "bat"},
	}
	for _, tt := range tests {
		if got := Closest(tt.name, tt.candidates); got != tt.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", tt.name, tt.candidates, got, tt.want)
		}
	}
}

func BenchmarkClosest(b *testing.B) {
	names := make([]string, 200)
	for i := range names {
		names[i] = "tool_number_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	b.ReportAllocs()
	for b.Loop() {
		Closest("tool_nubmer_qz", names)
	}
}
