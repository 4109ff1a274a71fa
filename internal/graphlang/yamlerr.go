package graphlang

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`) }) // compiled on first use, not at every start

// yamlError turns the YAML reader's error into one with a line and column
// that point at the mistake. The reader names, for a flow collection left
// open, the line before the one it opened on (and no column), so an
// unclosed or stray bracket is found by scanning src; other errors get
// their line corrected and the column of the line's first character.
func yamlError(src []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if p, what, ok := bracketMistake(src); ok {
		return &Error{Pos: p, Msg: fmt.Sprintf("reading the graph: %s (%s)", what, msg)}
	}
	m := yamlLine().FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Pos: Pos{1, 1}, Msg: "reading the graph: " + msg}
	}
	line, _ := strconv.Atoi(m[1])
	if strings.HasPrefix(m[2], "did not find expected") && !strings.Contains(m[2], "alphabetic") && !strings.Contains(m[2], "comment or line break") {
		// A parser error: its line is counted from 0.
		line++
	}
	lines := strings.Split(string(src), "\n")
	col := 1
	if line >= 1 && line <= len(lines) {
		col = len(lines[line-1]) - len(strings.TrimLeft(lines[line-1], " ")) + 1
	}
	return &Error{Pos: Pos{line, col}, Msg: "reading the graph: " + m[2]}
}

// bracketMistake finds a { or [ never closed, or a } or ] that closes
// nothing or the wrong one, outside quotes and comments.
func bracketMistake(src []byte) (Pos, string, bool) {
	type open struct {
		c   byte
		pos Pos
	}
	var stack []open
	line, col := 1, 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' {
			line, col = line+1, 0
			if quote == 0 {
				continue
			}
		}
		switch {
		case quote == '"':
			if c == '\\' {
				i++
				col++
			} else if c == '"' {
				quote = 0
			}
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '#' && (i == 0 || src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n'):
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case (c == '"' || c == '\'') && (len(stack) > 0 || startsScalar(src, i)):
			quote = c
		case c == '{' || c == '[':
			if len(stack) > 0 || startsScalar(src, i) {
				stack = append(stack, open{c, Pos{line, col}})
			}
		case (c == '}' || c == ']') && len(stack) > 0:
			top := stack[len(stack)-1]
			if want := closer(top.c); c != want {
				return Pos{line, col}, fmt.Sprintf("%c here closes the %c opened at %s; did you mean %c?", c, top.c, top.pos, want), true
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		top := stack[len(stack)-1]
		return top.pos, fmt.Sprintf("the %c opened here is never closed; add %c (or a missing comma)", top.c, closer(top.c)), true
	}
	return Pos{}, "", false
}

func closer(c byte) byte {
	if c == '{' {
		return '}'
	}
	return ']'
}

// startsScalar reports whether src[i] begins a value in block context:
// after "key: ", "- " or at the start of a line.
func startsScalar(src []byte, i int) bool {
	j := i - 1
	for j >= 0 && (src[j] == ' ' || src[j] == '\t') {
		j--
	}
	return j < 0 || src[j] == '\n' || src[j] == ':' || src[j] == '-'
}
