package commander

import "strings"

// Messages name the command that fixes a problem in one canonical form, the
// shell's: `nerve node restart fs`, `nerve call @fs ?`. Wherever a message
// is shown it is put in the syntax of that place: unchanged by the command
// line, `:node restart fs` and `@fs ?` in the Commander (REPLSyntax). Nodes
// and the session write the canonical form too; ShellSyntax turns the
// Commander's form back, for messages written before this rule.

var (
	toREPL  = strings.NewReplacer("`nerve call @", "`@", "`nerve call :", "`:", "`nerve ", "`:")
	toShell = strings.NewReplacer("`:", "`nerve ", "`@", "`nerve call @")
)

// REPLSyntax puts the commands a message names in the Commander's syntax.
func REPLSyntax(msg string) string { return toREPL.Replace(msg) }

// ShellSyntax puts the commands a message names in the shell's syntax.
func ShellSyntax(msg string) string { return toShell.Replace(msg) }

// LineNode returns the node a Commander line starting with '@' names, or
// "" for any other line.
func LineNode(line string) string {
	if !strings.HasPrefix(line, "@") {
		return ""
	}
	end := strings.IndexAny(line[1:], " \t\n.?")
	if end < 0 {
		return line[1:]
	}
	return line[1 : 1+end]
}
