package commander

import "testing"

func TestMessagesTakeTheSyntaxOfWhereTheyAreShown(t *testing.T) {
	for _, c := range []struct{ canonical, repl string }{
		{"restart it with `nerve node restart fs`", "restart it with `:node restart fs`"},
		{"(`nerve call @fs ?` lists its tools)", "(`@fs ?` lists its tools)"},
		{"(`nerve call :node ls`)", "(`:node ls`)"},
		{"no command here: nerve node ls", "no command here: nerve node ls"},
		// Issue 27: a closing backquote followed by ':' is no command, and
		// `nerve --help` is `:help`.
		{"unknown command \"nod\" for `nerve`: did you mean \"node\"? (commands: node, call; see `nerve --help`)", "unknown command \"nod\" for `nerve`: did you mean \"node\"? (commands: node, call; see `:help`)"},
		{"for `nerve node`: see `nerve node --help`", "for `:node`: see `:node --help`"},
		{"an unclosed ` `nerve node ls", "an unclosed ` `nerve node ls"},
	} {
		if got := REPLSyntax(c.canonical); got != c.repl {
			t.Errorf("REPLSyntax(%q) = %q, want %q", c.canonical, got, c.repl)
		}
	}
	for _, c := range []struct{ in, cli string }{
		{"(`:node ls` lists nodes)", "(`nerve node ls` lists nodes)"},
		{"did you mean read_file? `@fs ?` lists its tools", "did you mean read_file? `nerve call @fs ?` lists its tools"},
		{"restart it with `nerve node restart fs`", "restart it with `nerve node restart fs`"},
		{"unknown command \"ad\" for `nerve node`: did you mean \"add\"? (see `nerve node --help`)", "unknown command \"ad\" for `nerve node`: did you mean \"add\"? (see `nerve node --help`)"},
		{"`:node ls`: `@fs ?`", "`nerve node ls`: `nerve call @fs ?`"},
	} {
		if got := ShellSyntax(c.in); got != c.cli {
			t.Errorf("ShellSyntax(%q) = %q, want %q", c.in, got, c.cli)
		}
	}
}
