package cli

import (
	"io"
	"strings"
)

// Messages name the command that fixes a problem in one canonical form, the
// shell's: `nerve node restart fs`, `nerve call @fs ?`. Wherever a message
// is shown it is put in the syntax of that place: unchanged by the command
// line, `:node restart fs` and `@fs ?` in the Commander (replSyntax). Nodes
// and the session write the canonical form too; cliSyntax turns the
// Commander's form back, for messages written before this rule.

var (
	toREPL = strings.NewReplacer("`nerve call @", "`@", "`nerve call :", "`:", "`nerve ", "`:")
	toCLI  = strings.NewReplacer("`:", "`nerve ", "`@", "`nerve call @")
)

// replSyntax puts the commands a message names in the Commander's syntax.
func replSyntax(msg string) string { return toREPL.Replace(msg) }

// cliSyntax puts the commands a message names in the shell's syntax.
func cliSyntax(msg string) string { return toCLI.Replace(msg) }

// syntaxWriter rewrites what is written to w with fix; every write is one
// or more whole messages.
type syntaxWriter struct {
	w   io.Writer
	fix func(string) string
}

func (s syntaxWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.fix(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
