package commander

import "strings"

// Messages name the command that fixes a problem in one canonical form, the
// shell's: `nerve node restart fs`, `nerve call @fs ?`. Wherever a message
// is shown it is put in the syntax of that place: unchanged by the command
// line, `:node restart fs` and `@fs ?` in the Commander (REPLSyntax). Nodes
// and the session write the canonical form too; ShellSyntax turns the
// Commander's form back, for messages written before this rule.

// REPLSyntax puts the commands a message names in the Commander's syntax.
func REPLSyntax(msg string) string { return inSpans(msg, replSpan) }

// ShellSyntax puts the commands a message names in the shell's syntax.
func ShellSyntax(msg string) string { return inSpans(msg, shellSpan) }

// replSpan is a code span's text in the Commander's syntax: `nerve call
// @fs ?` is `@fs ?`, `nerve node ls` is `:node ls`, `nerve --help` is
// `:help`.
func replSpan(code string) string {
	for _, p := range []string{"nerve call @", "nerve call :"} {
		if strings.HasPrefix(code, p) {
			return code[len("nerve call "):]
		}
	}
	switch {
	case code == "nerve --help" || code == "nerve help":
		return ":help"
	case strings.HasPrefix(code, "nerve "):
		return ":" + code[len("nerve "):]
	}
	return code
}

// shellSpan is a code span's text in the shell's syntax: `:node ls` is
// `nerve node ls`, `@fs ?` is `nerve call @fs ?`.
func shellSpan(code string) string {
	switch {
	case strings.HasPrefix(code, ":"):
		return "nerve " + code[1:]
	case strings.HasPrefix(code, "@"):
		return "nerve call " + code
	}
	return code
}

// inSpans rewrites each code span of msg (the text between a pair of
// backquotes) with conv, and nothing else: a closing backquote followed
// by ':' is no command (`nerve node`: did you mean …).
func inSpans(msg string, conv func(string) string) string {
	if strings.IndexByte(msg, '`') < 0 {
		return msg
	}
	var b strings.Builder
	b.Grow(len(msg) + 16)
	for {
		open := strings.IndexByte(msg, '`')
		if open < 0 {
			break
		}
		end := strings.IndexByte(msg[open+1:], '`')
		if end < 0 {
			break
		}
		b.WriteString(msg[:open+1])
		b.WriteString(conv(msg[open+1 : open+1+end]))
		b.WriteByte('`')
		msg = msg[open+1+end+1:]
	}
	b.WriteString(msg)
	return b.String()
}

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
