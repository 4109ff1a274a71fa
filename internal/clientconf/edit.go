package clientconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// Entry is nerve's entry in a client's servers object.
type Entry struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// SetEntry returns data with servers[name] = entry and the servers named
// in remove deleted, where servers is the object under the top-level key
// (made when there is none). data is JSON with comments and trailing
// commas allowed (VS Code's JSONC): it is edited as hujson's syntax tree,
// so every byte outside the entries added, changed or removed — comments,
// trailing commas, spacing, the order and text of the other members —
// stays as it was. It returns data itself when nothing changes. Its
// errors start with path, and LINE:COLUMN where the file is not JSONC.
func SetEntry(path string, data []byte, key, name string, entry any, remove []string) ([]byte, error) {
	// A byte-order mark from a Windows editor is kept, outside the tree.
	if body, ok := bytes.CutPrefix(data, []byte(bom)); ok {
		out, err := SetEntry(path, body, key, name, entry, remove)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(out, body) {
			return data, nil
		}
		return append([]byte(bom), out...), nil
	}
	unit := indentUnit(data)
	if len(bytes.TrimSpace(data)) == 0 {
		v, err := render(map[string]any{key: map[string]any{name: entry}}, "", unit)
		if err != nil {
			return nil, err
		}
		return append(v.Pack(), '\n'), nil
	}
	if err := checkDepth(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, syntaxError(path, err)
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%s: the file is not a JSON object", path)
	}
	want, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	i := memberIndex(top, key)
	if i < 0 {
		// No servers object yet: add one as the last member of the top level.
		indent := memberIndent(top, "", unit)
		v, err := render(map[string]any{name: entry}, indent, unit)
		if err != nil {
			return nil, err
		}
		appendMember(top, key, v, "", indent, trailingComma(top))
		return root.Pack(), nil
	}
	servers, ok := top.Members[i].Value.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%s: %q is not an object", path, key)
	}
	trailing := trailingComma(servers)
	changed := removeMembers(servers, func(n string) bool { return n != name && slices.Contains(remove, n) })
	objIndent := memberIndent(top, "", unit)
	switch j := memberIndex(servers, name); {
	case j < 0:
		indent := memberIndent(servers, objIndent, unit)
		v, err := render(entry, indent, unit)
		if err != nil {
			return nil, err
		}
		appendMember(servers, name, v, objIndent, indent, trailing)
	case !sameJSON(servers.Members[j].Value, want):
		own := &servers.Members[j]
		indent, ok := lineIndent(own.Name.BeforeExtra)
		if !ok {
			indent = memberIndent(servers, objIndent, unit)
		}
		v, err := render(entry, indent, unit)
		if err != nil {
			return nil, err
		}
		v.BeforeExtra, v.AfterExtra = own.Value.BeforeExtra, own.Value.AfterExtra
		if !bytes.Contains(own.Name.BeforeExtra, []byte("\n")) && !bytes.Contains(own.Value.Pack(), []byte("\n")) {
			v.Minimize() // an entry written on one line stays on one line
			v.BeforeExtra, v.AfterExtra = own.Value.BeforeExtra, own.Value.AfterExtra
		}
		own.Value = v
	default:
		if !changed {
			return data, nil
		}
	}
	return root.Pack(), nil
}

const bom = "\xef\xbb\xbf"

// syntaxError words hujson's "hujson: line L, column C: why" as
// "PATH:L:C: why".
func syntaxError(path string, err error) error {
	var line, col int
	msg := err.Error()
	if n, _ := fmt.Sscanf(msg, "hujson: line %d, column %d:", &line, &col); n == 2 {
		_, why, _ := strings.Cut(msg, ": ")
		_, why, _ = strings.Cut(why, ": ")
		return fmt.Errorf("%s:%d:%d: not JSON (nor JSON with comments): %s", path, line, col, why)
	}
	return fmt.Errorf("%s: not JSON (nor JSON with comments): %w", path, err)
}

// render returns v as JSON indented by unit, its inner lines starting
// with indent.
func render(v any, indent, unit string) (hujson.Value, error) {
	b, err := json.MarshalIndent(v, indent, unit)
	if err != nil {
		return hujson.Value{}, err
	}
	return hujson.Parse(b)
}

// memberIndex returns the index of obj's first member called name, or -1.
func memberIndex(obj *hujson.Object, name string) int {
	return slices.IndexFunc(obj.Members, func(m hujson.ObjectMember) bool {
		lit, ok := m.Name.Value.(hujson.Literal)
		return ok && lit.String() == name
	})
}

// memberIndent is the indentation of obj's members: that of its first
// member's line, else one unit more than outer, the object's own.
func memberIndent(obj *hujson.Object, outer, unit string) string {
	if len(obj.Members) > 0 {
		if indent, ok := lineIndent(obj.Members[0].Name.BeforeExtra); ok {
			return indent
		}
	}
	return outer + unit
}

// lineIndent returns the space that starts the last line of before, the
// space and comments before a member: its indentation, if it is on a
// line of its own.
func lineIndent(before hujson.Extra) (string, bool) {
	i := bytes.LastIndexByte(before, '\n')
	if i < 0 || len(bytes.Trim(before[i+1:], " \t")) > 0 {
		return "", false
	}
	return string(before[i+1:]), true
}

// appendMember adds name: v as obj's last member, laid out as the members
// before it (one per line, or all on one line), with a trailing comma if
// trailing. A comment on the line of the last member stays on it.
func appendMember(obj *hujson.Object, name string, v hujson.Value, outer, indent string, trailing bool) {
	m := hujson.ObjectMember{
		Name:  hujson.Value{Value: hujson.String(name)},
		Value: v,
	}
	m.Value.BeforeExtra = hujson.Extra(" ")
	n := len(obj.Members)
	oneLine := n > 0 && !bytes.Contains(obj.Members[n-1].Name.BeforeExtra, []byte("\n"))
	switch {
	case oneLine:
		m.Value.Minimize()
		m.Value.BeforeExtra = hujson.Extra(" ")
		m.Name.BeforeExtra = hujson.Extra(" ")
	default:
		// The object's closing line stays after the new member; what
		// follows the last member on its own line (a comment) stays there.
		after := obj.AfterExtra
		head, rest := after, hujson.Extra(nil)
		if i := bytes.IndexByte(after, '\n'); i >= 0 {
			head, rest = after[:i+1], after[i+1:]
		}
		// A block comment that goes on past the line stays where it is.
		if len(bytes.TrimSpace(head)) > 0 && head.IsValid() {
			if !bytes.HasSuffix(head, []byte("\n")) {
				head = append(slices.Clip(head), '\n')
			}
			m.Name.BeforeExtra = append(slices.Clone(head), indent...)
			obj.AfterExtra = append(hujson.Extra("\n"), rest...)
		} else {
			m.Name.BeforeExtra = hujson.Extra("\n" + indent)
		}
		if n == 0 || len(bytes.Trim(obj.AfterExtra, " \t")) == 0 {
			obj.AfterExtra = hujson.Extra("\n" + outer)
		}
	}
	if trailing {
		m.Value.AfterExtra = hujson.Extra{}
	}
	obj.Members = append(obj.Members, m)
}

// removeMembers deletes the members whose names drop says, with the
// comments and space before each; the object keeps its trailing comma, or
// its lack of one. It reports whether it deleted any.
func removeMembers(obj *hujson.Object, drop func(string) bool) bool {
	trailing := trailingComma(obj)
	kept := obj.Members[:0]
	for _, m := range obj.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok && drop(lit.String()) {
			continue
		}
		kept = append(kept, m)
	}
	if len(kept) == len(obj.Members) {
		return false
	}
	clear(obj.Members[len(kept):])
	obj.Members = kept
	if n := len(kept); n > 0 {
		last := &obj.Members[n-1].Value
		switch {
		case trailing && last.AfterExtra == nil:
			last.AfterExtra = hujson.Extra{}
		case !trailing && last.AfterExtra != nil:
			obj.AfterExtra = append(slices.Clone(last.AfterExtra), obj.AfterExtra...)
			last.AfterExtra = nil
		}
	}
	return true
}

// trailingComma reports whether obj's last member has a comma after it.
func trailingComma(obj *hujson.Object) bool {
	n := len(obj.Members)
	return n > 0 && obj.Members[n-1].Value.AfterExtra != nil
}

// sameJSON reports whether v holds the same JSON value as want, whatever
// its layout and comments.
func sameJSON(v hujson.Value, want []byte) bool {
	c := v.Clone()
	c.Standardize()
	var x, y any
	return json.Unmarshal(c.Pack(), &x) == nil && json.Unmarshal(want, &y) == nil && reflect.DeepEqual(x, y)
}

// indentUnit guesses a file's indentation: that of its first indented
// line, else two spaces.
func indentUnit(data []byte) string {
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && trimmed != "" && !strings.HasPrefix(trimmed, "*") {
			return line[:n]
		}
	}
	return "  "
}

// maxBrackets bounds the brackets of a file that is not plain JSON before
// hujson reads it: hujson recurses once per level with no limit of its
// own, and a million levels overflow the stack, which kills the process
// (internal/mcpconf reads configs under the same bound). Plain JSON is
// held to encoding/json's 10000 levels.
const maxBrackets = 10000

// checkDepth refuses a file hujson could not read without overflowing
// the stack.
func checkDepth(data []byte) error {
	err := json.Unmarshal(data, new(json.RawMessage))
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "exceeded max depth") {
		return fmt.Errorf("the JSON nests more than 10000 deep; a client config nests a few levels: %w", err)
	}
	if bytes.Count(data, []byte("{"))+bytes.Count(data, []byte("[")) > maxBrackets {
		return fmt.Errorf("not plain JSON (%v), and files with comments or trailing commas are read up to %d brackets", err, maxBrackets)
	}
	return nil
}
