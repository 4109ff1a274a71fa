package mcpconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// The config is read by two libraries: encoding/json checks the whole
// document (its messages name syntax errors as they always have), then
// hujson parses it into values that keep their byte offsets, in file
// order, duplicates included, with VS Code's comments and trailing commas
// allowed. Every later error or warning names a line and column from
// those offsets.
// Not yaml.Node, which refuses valid JSON and reads no comments
// (docs/performance.md, MCP config files).

// value is one JSON value of the document.
type value struct{ v *hujson.Value }

// member is one key of a JSON object with its value.
type member struct {
	key    string
	keyOff int
	val    value
}

// off is the byte offset of v's first byte.
func (v value) off() int { return v.v.StartOffset }

// raw is the JSON text of a string, number, boolean or null.
func (v value) raw() []byte {
	lit, _ := v.v.Value.(hujson.Literal)
	return lit
}

// kind names the JSON type of v for messages.
func (v value) kind() string {
	switch v.v.Value.Kind() {
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
	s := string(v.raw())
	if utf8.RuneCountInString(s) > 40 {
		return k
	}
	return k + " " + s
}

func (v value) isNull() bool { return v.kind() == "null" }

// str is the string v holds, decoded as encoding/json does.
func (v value) str() string {
	lit, _ := v.v.Value.(hujson.Literal)
	return lit.String()
}

// members returns the keys of the object v in document order.
func members(v value) []member {
	obj, _ := v.v.Value.(*hujson.Object)
	if obj == nil {
		return nil
	}
	out := make([]member, len(obj.Members))
	for i := range obj.Members {
		m := &obj.Members[i]
		key, _ := m.Name.Value.(hujson.Literal)
		out[i] = member{key: key.String(), keyOff: m.Name.StartOffset, val: value{&m.Value}}
	}
	return out
}

// elements returns the items of the array v.
func elements(v value) []value {
	arr, _ := v.v.Value.(*hujson.Array)
	if arr == nil {
		return nil
	}
	out := make([]value, len(arr.Elements))
	for i := range arr.Elements {
		out[i] = value{&arr.Elements[i]}
	}
	return out
}

// maxBrackets bounds the brackets of a document that is not plain JSON
// before hujson reads it: hujson recurses once per level with no limit of
// its own, and a million levels overflow the stack, which kills the
// process. Plain JSON was held to encoding/json's 10000 levels already.
const maxBrackets = 10000

// read parses the document.
func (f *file) read() (value, error) {
	jerr := json.Unmarshal(f.data, new(json.RawMessage))
	var se *json.SyntaxError
	if jerr != nil && (!errors.As(jerr, &se) || strings.Contains(jerr.Error(), "exceeded max depth")) {
		return value{}, f.syntaxError(jerr)
	}
	if jerr != nil && bytes.Count(f.data, []byte("{"))+bytes.Count(f.data, []byte("[")) > maxBrackets {
		err := f.syntaxError(jerr)
		var pe *posError
		if errors.As(err, &pe) && jsoncAt(f.data, int(se.Offset)-1) {
			pe.msg += fmt.Sprintf(" (comments and trailing commas are read in files of up to %d brackets)", maxBrackets)
		}
		return value{}, err
	}
	v, herr := hujson.Parse(f.data)
	switch {
	case herr == nil:
		return value{&v}, nil
	case jerr == nil:
		return value{}, fmt.Errorf("%s: %w", f.path, herr) // JSON that hujson refuses: not seen
	}
	// Neither reads it. encoding/json's message stands, as for any JSON
	// file, unless it stopped at a comment or a trailing comma, which
	// hujson reads: then hujson names the mistake after it.
	off := int(se.Offset) - 1 // Offset counts the offending byte
	var line, col int
	if _, err := fmt.Sscanf(herr.Error(), "hujson: line %d, column %d:", &line, &col); err != nil ||
		!jsoncAt(f.data, off) || strings.HasPrefix(se.Error(), "unexpected end") {
		return value{}, f.syntaxError(jerr)
	}
	hoff := f.offset(line, col)
	switch {
	case strings.Contains(herr.Error(), "parsing comment: "):
		return value{}, f.errorf(hoff, "a comment is not closed: end it with */")
	case errors.Is(herr, io.ErrUnexpectedEOF) && v.Value == nil:
		return value{}, f.emptyError() // comments only
	case errors.Is(herr, io.ErrUnexpectedEOF):
		return value{}, f.endError()
	case hoff == off:
		return value{}, f.syntaxError(jerr)
	}
	_, msg, _ := strings.Cut(herr.Error(), fmt.Sprintf("column %d: ", col))
	return value{}, f.errorf(hoff, "%s", cut(msg, 100))
}

// jsoncAt reports whether encoding/json stopped at off because of what
// JSONC allows: a comment, or a bracket after a trailing comma.
func jsoncAt(data []byte, off int) bool {
	if off < 0 || off >= len(data) {
		return false
	}
	switch data[off] {
	case '/':
		return off+1 < len(data) && (data[off+1] == '/' || data[off+1] == '*')
	case '}', ']':
		before := bytes.TrimRight(data[:off], " \t\r\n")
		return len(before) > 0 && before[len(before)-1] == ','
	}
	return false
}

// offset is the byte offset of a 1-based line and byte column.
func (f *file) offset(line, col int) int {
	off := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(f.data[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return min(off+col-1, len(f.data))
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

// file is the document being read: its name and bytes.
type file struct {
	path string
	data []byte
	// lineOff and line are the last offset lineOf counted to and its
	// line: servers come in file order, so each count goes on from there.
	lineOff, line int
}

// lineOf is the 1-based line of byte offset off.
func (f *file) lineOf(off int) int {
	off = min(max(off, 0), len(f.data))
	if off < f.lineOff || f.line == 0 {
		f.lineOff, f.line = 0, 1
	}
	f.line += bytes.Count(f.data[f.lineOff:off], []byte("\n"))
	f.lineOff = off
	return f.line
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
	text = strings.TrimRight(string(f.data[start:end]), "\r")
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
	msg := se.Error()
	if strings.HasPrefix(msg, "unexpected end of JSON input") {
		return f.endError()
	}
	if strings.Contains(msg, "exceeded max depth") {
		msg = "the JSON nests more than 10000 deep (the limit of Go's JSON decoder); an MCP config nests a few levels"
	}
	return f.errorf(int(se.Offset)-1, "%s", msg) // Offset counts the offending byte
}

// endError is the error of a document that ends too soon: it points just
// after the last thing written.
func (f *file) endError() error {
	off := len(bytes.TrimRight(f.data, " \t\r\n"))
	if off == 0 {
		return f.emptyError()
	}
	return f.errorf(off, "unexpected end of JSON input (is a closing } or ] missing?)")
}

func (f *file) emptyError() error {
	return fmt.Errorf("%s: the file is empty: write {\"mcpServers\": {}} and add servers to it", f.path)
}

// cut is s, or its first n characters and "…" (hujson quotes a whole bad
// literal, which may be megabytes long).
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
