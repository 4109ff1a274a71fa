package commander

import "testing"

func TestMessagesTakeTheSyntaxOfWhereTheyAreShown(t *testing.T) {
	for _, c := range []struct{ canonical, repl string }{
		{"restart it with `nerve node restart fs`", "restart it with `:node restart fs`"},
		{"(`nerve call @fs ?` lists its tools)", "(`@fs ?` lists its tools)"},
		{"(`nerve call :node ls`)", "(`:node ls`)"},
		{"no command here: nerve node ls", "no command here: nerve node ls"},
	} {
		if got := REPLSyntax(c.canonical); got != c.repl {
			t.Errorf("REPLSyntax(%q) = %q, want %q", c.canonical, got, c.repl)
		}
	}
	for _, c := range []struct{ in, cli string }{
		{"(`:node ls` lists nodes)", "(`nerve node ls` lists nodes)"},
		{"did you mean read_file? `@fs ?` lists its tools", "did you mean read_file? `nerve call @fs ?` lists its tools"},
		{"restart it with `nerve node restart fs`", "restart it with `nerve node restart fs`"},
	} {
		if got := ShellSyntax(c.in); got != c.cli {
			t.Errorf("ShellSyntax(%q) = %q, want %q", c.in, got, c.cli)
		}
	}
}
