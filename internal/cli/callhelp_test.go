package cli

import "testing"

// `nerve call @n ?` shows commands a shell runs, not Commander lines
// (issue 22, Also: its help ended with REPL-syntax hints).
func TestAsCallLines(t *testing.T) {
	in := "@fs: 2 tools\n  read_file  Read a file.\n@fs TOOL ? shows a tool's parameters; @fs TOOL key=value or {JSON} calls it\nExamples:\n  @fs read_file path=P\n  @fs read_file {\"path\": \"it's\"}\n"
	want := "@fs: 2 tools\n  read_file  Read a file.\nnerve call @fs TOOL ? shows a tool's parameters; nerve call @fs TOOL key=value or {JSON} calls it\nExamples:\n  nerve call @fs read_file path=P\n  nerve call @fs read_file '{\"path\": \"it'\\''s\"}'\n"
	if got := asCallLines(in); got != want {
		t.Errorf("asCallLines:\n%s\nwant:\n%s", got, want)
	}
}
