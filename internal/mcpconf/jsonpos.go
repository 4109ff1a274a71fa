package mcpconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The config is read in two steps: the whole document is checked with
// encoding/json (which gives the offset of a syntax error), then walked as
// ordered members with their byte offsets, so that servers keep file order
// and every later error or warning can name a line and column.

// value is one JSON value of the document and the offset of its first byte.
type value struct {
	raw json.RawMessage
	off int
}

// member is one key of a JSON object with its value.
type member struct {
	key    string
	keyOff int
	val    value
}

// kind names the JSON type of v for messages.
func (v value) kind() string {
	if len(v.raw) == 0 {
		return "nothing"
	}
	switch v.raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// describe is kind plus the value itself when it is short, e.g. `number 3000`.
func (v value) describe() string {
	k := v.kind()
	switch k {
	case "object", "array", "null":
		return k
	}
	s := string(v.raw)
	if utf8.RuneCountInString(s) > 40 {
		return k
	}
	return k + " " + s
}

func (v value) isNull() bool { return v.kind() == "null" }

func skipSpace(data []byte, i int, extra string) int {
	for i < len(data) && (strings.IndexByte(" \t\r\n", data[i]) >= 0 || strings.IndexByte(extra, data[i]) >= 0) {
		i++
	}
	return i
}

// members returns the keys of the object v in document order. v must be a
// valid JSON object (the document was validated before it is walked).
func members(v value) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	var out []member
	for dec.More() {
		keyOff := skipSpace(v.raw, int(dec.InputOffset()), ",")
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		valOff := skipSpace(v.raw, int(dec.InputOffset()), ":")
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{key: key, keyOff: v.off + keyOff, val: value{raw: raw, off: v.off + valOff}})
	}
	return out, nil
}

// elements returns the items of the array v.
func elements(v value) ([]value, error) {
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	if _, err := dec.Token(); err != nil { // '['
		return nil, err
	}
	var out []value
	for dec.More() {
		off := skipSpace(v.raw, int(dec.InputOffset()), ",")
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, value{raw: raw, off: v.off + off})
	}
	return out, nil
}

// stripJSONC blanks out // and /* */ comments and trailing commas, which
// VS Code's mcp.json and settings.json allow. It keeps every other byte
// where it was, so offsets still point into the file the user wrote.
func stripJSONC(data []byte) []byte {
	if !bytes.ContainsAny(data, "/,") {
		return data
	}
	out := append([]byte(nil), data...)
	blank := func(from, to int) {
		for k := from; k < to; k++ {
			if out[k] != '\n' && out[k] != '\r' {
				out[k] = ' '
			}
		}
	}
	// Pass 1: comments.
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			i = skipString(out, i)
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out // unterminated: leave it for the JSON error
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		}
	}
	// Pass 2: trailing commas, only before the bracket that closes what
	// is open, so that [1, } is still reported as the mistake it is.
	var open []byte
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			i = skipString(out, i)
		case '{', '[':
			open = append(open, out[i])
		case '}', ']':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		case ',':
			j := skipSpace(out, i+1, "")
			if j < len(out) && len(open) > 0 &&
				(out[j] == '}' && open[len(open)-1] == '{' || out[j] == ']' && open[len(open)-1] == '[') {
				out[i] = ' '
			}
		}
	}
	return out
}

// skipString returns the index of the closing quote of the string that
// starts at data[i], or the last index if it is unterminated.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// posError is an error at a place in a config file. Error shows the line
// and a caret under the column.
type posError struct {
	file      string
	line, col int
	msg       string
	text      string // the line, without its newline
	caret     int    // byte index of the caret in text
}

func (e *posError) Error() string {
	text, caret := clipLine(e.text, e.caret)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: %s\n%s\n", e.file, e.line, e.col, e.msg, text)
	for _, r := range text[:caret] {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteByte('^')
	return b.String()
}

// clipLine keeps at most about 100 characters of a long (minified) line
// around the caret.
func clipLine(text string, caret int) (string, int) {
	const before, after = 60, 40
	if utf8.RuneCountInString(text) <= before+after {
		return text, caret
	}
	start := caret
	for n := 0; start > 0 && n < before; n++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	end := caret
	for n := 0; end < len(text) && n < after; n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	out, c := text[start:end], caret-start
	if start > 0 {
		out, c = "…"+out, c+len("…")
	}
	if end < len(text) {
		out += "…"
	}
	return out, c
}

// file is the document being read: its name, bytes and the place messages
// point at.
type file struct {
	path string
	data []byte // comments blanked out; what is parsed
	orig []byte // as written; what messages show
}

// pos returns the 1-based line and column (in characters) of byte offset
// off, the text of that line and off's index in it.
func (f *file) pos(off int) (line, col int, text string, idx int) {
	off = min(max(off, 0), len(f.data))
	start := bytes.LastIndexByte(f.data[:off], '\n') + 1
	end := bytes.IndexByte(f.data[off:], '\n')
	if end < 0 {
		end = len(f.data)
	} else {
		end += off
	}
	text = strings.TrimRight(string(f.orig[start:end]), "\r")
	idx = min(off-start, len(text))
	line = bytes.Count(f.data[:start], []byte("\n")) + 1
	col = utf8.RuneCountInString(text[:idx]) + 1
	return line, col, text, idx
}

func (f *file) errorf(off int, format string, args ...any) error {
	line, col, text, idx := f.pos(off)
	return &posError{file: f.path, line: line, col: col, msg: fmt.Sprintf(format, args...), text: text, caret: idx}
}

// at prefixes a warning with file:line:col.
func (f *file) at(off int) string {
	line, col, _, _ := f.pos(off)
	return fmt.Sprintf("%s:%d:%d", f.path, line, col)
}

// syntaxError turns an encoding/json error on the whole document into one
// that points at the offending character.
func (f *file) syntaxError(err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	off := int(se.Offset) - 1 // Offset counts the offending byte
	msg := se.Error()
	if strings.HasPrefix(msg, "unexpected end of JSON input") {
		// Point just after the last thing written.
		off = len(bytes.TrimRight(f.data, " \t\r\n"))
		if off == 0 {
			return fmt.Errorf("%s: the file is empty: write {\"mcpServers\": {}} and add servers to it", f.path)
		}
		msg += " (is a closing } or ] missing?)"
	}
	if strings.Contains(msg, "exceeded max depth") {
		msg = "the JSON nests more than 10000 deep (the limit of Go's JSON decoder); an MCP config nests a few levels"
	}
	return f.errorf(off, "%s", msg)
}
