package commander

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// parseJSONArgs checks a JSON object argument: syntax (with the position of
// a mistake), keys against the schema, value types, required keys.
func parseJSONArgs(ln *Line, s schemaObj, text string, refs Refs) (json.RawMessage, error) {
	sub, err := substituteJSON(text, refs)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(sub), &obj); err != nil {
		return nil, jsonError(sub, err)
	}
	if obj == nil {
		return nil, errors.New(`arguments must be a JSON object like {"key": "value"}`)
	}
	if s != nil {
		for key, raw := range obj {
			p, known := property(s, s, key)
			if !known {
				if closedObject(s) {
					return nil, unknownKey(ln, s, key)
				}
				continue
			}
			if ts := types(s, p); len(ts) > 0 && !allows(ts, rawType(raw)) {
				return nil, fmt.Errorf("%q is %s but should be %s — `@%s %s ?` shows its parameters", key, article(rawType(raw)), typeLabel(s, p), ln.Node, ln.Tool)
			}
		}
	}
	if err := checkRequired(ln, s, obj); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(sub))
	if err := json.Compact(&buf, []byte(sub)); err != nil {
		return nil, jsonError(sub, err)
	}
	return buf.Bytes(), nil
}

// maxJSONDepth is encoding/json's bound on nesting, which keeps the
// Commander's own walks over a value (rendering, coercion) bounded too.
const maxJSONDepth = 10000

// jsonError turns a decoding error into a one-line message with the line
// and column of the mistake.
func jsonError(text string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case strings.Contains(err.Error(), "exceeded max depth"):
		return fmt.Errorf("the JSON nests lists and objects more than %d deep (the limit): flatten it", maxJSONDepth)
	case errors.As(err, &se):
		if strings.Contains(se.Error(), "unexpected end") {
			return errors.New(`the JSON ends before it is complete — close every "string", { and [`)
		}
		line, col := lineCol(text, int(se.Offset))
		return fmt.Errorf("invalid JSON at line %d, column %d of the arguments: %s — check the quotes, commas and colons near %q", line, col, strings.TrimPrefix(se.Error(), "invalid character "), near(text, int(se.Offset)-1))
	case errors.As(err, &te):
		return errors.New(`arguments must be a JSON object like {"key": "value"}`)
	case strings.Contains(err.Error(), "unexpected end"):
		return errors.New(`the JSON ends before it is complete — close every "string", { and [`)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// lineCol converts a byte offset (json.SyntaxError counts the bytes read,
// so the mistake is the byte before it) into 1-based line and column.
func lineCol(text string, off int) (line, col int) {
	if off > 0 {
		off--
	}
	off = min(off, len(text))
	line = 1 + strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	return line, len([]rune(text[start:off])) + 1
}

// rawType is the JSON type of an encoded value, judged by its first byte.
func rawType(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "number"
	}
	return "integer"
}

func article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func unknownKey(ln *Line, s schemaObj, key string) error {
	names := propertyNames(s)
	hint := fmt.Sprintf("`@%s %s ?` lists its parameters", ln.Node, ln.Tool)
	if d := DidYouMean(key, names); d != "" {
		hint = "did you mean " + d + "? " + hint
	} else if len(names) > 0 && len(names) <= 8 {
		hint = "it takes " + strings.Join(names, ", ") + "; " + hint
	}
	return fmt.Errorf("unknown argument %q for @%s %s — %s", key, ln.Node, ln.Tool, hint)
}

// checkRequired reports the first required key missing from given.
func checkRequired(ln *Line, s schemaObj, given map[string]json.RawMessage) error {
	for _, r := range requiredNames(s) {
		if _, ok := given[r]; ok {
			continue
		}
		p, _ := property(s, s, r)
		return fmt.Errorf("missing required argument %q (%s) — add %s=%s, or see `@%s %s ?`", r, typeLabel(s, p), r, placeholder(s, r, p), ln.Node, ln.Tool)
	}
	return nil
}

// kvArg is one key=value word as typed.
type kvArg struct {
	key    string
	value  string
	quoted bool // some of the value was quoted: a string even if it looks like a number
	json   bool // the value is a JSON object or array written inline
}

// splitKeyValues splits `a=1 b="x y" c={"k": [1, 2]}` into words; a value
// starting with '{' or '[' runs to its matching bracket, spaces and all.
func splitKeyValues(s string) ([]kvArg, error) {
	var out []kvArg
	i := 0
	for {
		for i < len(s) && isSpaceByte(s[i]) {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		key, ok := leadingKey(s[i:])
		if !ok {
			word, _ := cutSpace(s[i:])
			return nil, fmt.Errorf("%q is not key=value — write KEY=VALUE, and quote a value with spaces: k=\"a b\"", word)
		}
		i += len(key) + 1
		arg := kvArg{key: key}
		if i < len(s) && (s[i] == '{' || s[i] == '[') {
			end, ok := jsonEnd(s, i)
			if !ok {
				return nil, fmt.Errorf("%s=%s: the %c is never closed — close it or quote the value", key, clip(s[i:], 20), s[i])
			}
			start := i
			arg.value, arg.json = s[i:end], true
			i = end
			if i < len(s) && !isSpaceByte(s[i]) {
				return nil, fmt.Errorf("%s=%s: put a space after the closing %c", key, clip(s[start:], 20), s[end-1])
			}
			out = append(out, arg)
			continue
		}
		var b strings.Builder
		for i < len(s) && !isSpaceByte(s[i]) {
			switch c := s[i]; c {
			case '\'':
				end := strings.IndexByte(s[i+1:], '\'')
				if end < 0 {
					return nil, fmt.Errorf("%s=: unclosed ' quote — close it", key)
				}
				b.WriteString(s[i+1 : i+1+end])
				i += end + 2
				arg.quoted = true
			case '"':
				j := i + 1
				for ; j < len(s) && s[j] != '"'; j++ {
					if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
						j++
					}
					b.WriteByte(s[j])
				}
				if j >= len(s) {
					return nil, fmt.Errorf(`%s=: unclosed " quote — close it`, key)
				}
				i = j + 1
				arg.quoted = true
			case '\\':
				if i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			default:
				b.WriteByte(c)
				i++
			}
		}
		arg.value = b.String()
		out = append(out, arg)
	}
}

// jsonEnd returns the index just past the JSON value that starts at s[i]
// with '{' or '['.
func jsonEnd(s string, i int) (int, bool) {
	depth := 0
	inStr, esc := false, false
	for j := i; j < len(s); j++ {
		c := s[j]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// parseKeyValues builds the JSON object for `k=v ...`, coercing each value by
// the schema of its key.
func parseKeyValues(ln *Line, s schemaObj, text string, refs Refs) (json.RawMessage, error) {
	args, err := splitKeyValues(text)
	if err != nil {
		// `comand=pwd ls`: the misspelt key is the mistake to name.
		if key, ok := leadingKey(text); ok && s != nil && closedObject(s) {
			if _, known := property(s, s, key); !known {
				return nil, unknownKey(ln, s, key)
			}
		}
		return nil, err
	}
	type entry struct {
		key string
		raw []byte
	}
	entries := make([]entry, 0, len(args))
	given := make(map[string]json.RawMessage, len(args))
	for _, a := range args {
		var p schemaObj
		if s != nil {
			var known bool
			p, known = property(s, s, a.key)
			if !known && closedObject(s) {
				return nil, unknownKey(ln, s, a.key)
			}
		}
		if strings.Contains(a.value, refMark) {
			if a.json {
				a.value, err = substituteJSON(a.value, refs)
			} else {
				a.value, err = substituteText(a.value, refs)
				a.quoted = true
			}
			if err != nil {
				return nil, err
			}
		}
		raw, err := coerce(s, p, a)
		if err != nil {
			return nil, err
		}
		if prev, dup := given[a.key]; dup {
			// tags=a tags=b: an array key given again adds items.
			var items, more []json.RawMessage
			if !slices.Contains(types(s, p), "array") || json.Unmarshal(prev, &items) != nil || json.Unmarshal(raw, &more) != nil {
				return nil, fmt.Errorf("%s is given twice — give each key once (an array takes %s=[1,2])", a.key, a.key)
			}
			raw, _ = json.Marshal(append(items, more...))
			i := slices.IndexFunc(entries, func(e entry) bool { return e.key == a.key })
			entries[i].raw = raw
			given[a.key] = raw
			continue
		}
		given[a.key] = raw
		entries = append(entries, entry{key: a.key, raw: raw})
	}
	if err := checkRequired(ln, s, given); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64)
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.key)
		b = append(b, ':')
		b = append(b, e.raw...)
	}
	b = append(b, '}')
	for _, e := range entries {
		// A value nested as deep as encoding/json allows is one level too
		// deep inside the arguments' object (found by FuzzLineDeep).
		if e.raw[0] == '[' || e.raw[0] == '{' {
			if !json.Valid(b) {
				return nil, fmt.Errorf("the arguments nest lists and objects more than %d deep (the limit): flatten them", maxJSONDepth)
			}
			break
		}
	}
	return b, nil
}

// coerce turns one typed value into JSON according to its property schema
// p (nil: unknown, the type is guessed: numbers, booleans and null as such,
// anything else a string).
func coerce(root, p schemaObj, a kvArg) ([]byte, error) {
	ts := types(root, p)
	v := a.value
	var out []byte
	switch {
	case a.json:
		if !json.Valid([]byte(v)) {
			var x any
			err := json.Unmarshal([]byte(v), &x)
			return nil, fmt.Errorf("%s=%s: %v", a.key, clip(v, 30), jsonError(v, err))
		}
		t := rawType([]byte(v))
		switch {
		case allows(ts, t):
			out = compactJSON(v)
		case allows(ts, "string"):
			out = appendJSONString(nil, v)
		default:
			return nil, expected(a, ts)
		}
	case len(ts) == 0:
		switch {
		case !a.quoted && (v == "true" || v == "false" || v == "null" || isJSONNumber(v)):
			out = []byte(v)
		default:
			out = appendJSONString(nil, v)
		}
	default:
		out = coerceTyped(root, p, ts, a)
		if out == nil {
			return nil, expected(a, ts)
		}
	}
	if vals := enumValues(p); len(vals) > 0 {
		var got any
		_ = json.Unmarshal(out, &got)
		if !slices.ContainsFunc(vals, func(e any) bool { return jsonEqual(e, got) }) {
			names := make([]string, len(vals))
			for i, e := range vals {
				names[i] = enumString(e)
			}
			msg := fmt.Sprintf("%s=%s: expected one of %s", a.key, v, strings.Join(names, ", "))
			if d := DidYouMean(v, names); d != "" {
				msg += " — did you mean " + d + "?"
			}
			return nil, errors.New(msg)
		}
	}
	return out, nil
}

// coerceTyped tries the schema's types in a fixed order: the exact forms
// (integer, number, boolean, null) before the catch-all string, so count=5
// is a number for ["integer","string"]. nil means no type fits.
func coerceTyped(root, p schemaObj, ts []string, a kvArg) []byte {
	v := a.value
	if !a.quoted || !allows(ts, "string") {
		switch {
		case slices.Contains(ts, "integer") && isJSONInteger(v):
			return []byte(v)
		case slices.Contains(ts, "number") && isJSONNumber(v):
			return []byte(v)
		case slices.Contains(ts, "boolean") && (v == "true" || v == "false"):
			return []byte(v)
		case slices.Contains(ts, "null") && v == "null":
			return []byte(v)
		}
	}
	if slices.Contains(ts, "string") {
		return appendJSONString(nil, v)
	}
	if slices.Contains(ts, "array") {
		// tags=a,b,c: comma-separated items, each coerced by "items".
		items, _ := p["items"].(map[string]any)
		items = resolve(root, items)
		b := []byte{'['}
		if v != "" {
			for i, part := range strings.Split(v, ",") {
				it := coerceTyped(root, items, orAny(types(root, items)), kvArg{key: a.key, value: part, quoted: a.quoted})
				if it == nil {
					return nil
				}
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, it...)
			}
		}
		return append(b, ']')
	}
	return nil
}

// orAny stands in for an items schema without a type: numbers stay numbers,
// the rest are strings.
func orAny(ts []string) []string {
	if len(ts) == 0 {
		return []string{"number", "boolean", "null", "string"}
	}
	return ts
}

func expected(a kvArg, ts []string) error {
	want := strings.Join(ts, " or ")
	switch {
	case slices.Equal(ts, []string{"boolean"}):
		want = "true or false"
	case slices.Equal(ts, []string{"object"}):
		want = `a JSON object like ` + a.key + `={"k":1}`
	case slices.Equal(ts, []string{"array"}):
		want = "an array like " + a.key + "=[1,2] or " + a.key + "=a,b"
	}
	return fmt.Errorf("%s=%s: expected %s", a.key, clip(a.value, 30), want)
}

func compactJSON(v string) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(v)) != nil {
		return []byte(v)
	}
	return buf.Bytes()
}

// isJSONInteger reports whether v is a JSON integer literal (-12, 0, 7).
func isJSONInteger(v string) bool {
	if v == "" {
		return false
	}
	i := 0
	if v[0] == '-' {
		i = 1
	}
	if i >= len(v) || (v[i] == '0' && i+1 < len(v)) {
		return false
	}
	for ; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// isJSONNumber reports whether v follows JSON's number grammar (so "0x10",
// "inf" or "1_000", which strconv accepts, are not numbers here).
func isJSONNumber(v string) bool {
	i, n := 0, len(v)
	if i < n && v[i] == '-' {
		i++
	}
	switch {
	case i < n && v[i] == '0':
		i++
	case i < n && v[i] >= '1' && v[i] <= '9':
		for i < n && v[i] >= '0' && v[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < n && v[i] == '.' {
		i++
		d := i
		for i < n && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < n && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < n && (v[i] == '+' || v[i] == '-') {
			i++
		}
		d := i
		for i < n && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == n
}

func jsonEqual(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

func enumString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// near is the text around byte i, on one line.
func near(text string, i int) string {
	lo, hi := max(0, i-8), min(len(text), i+8)
	for lo > 0 && text[lo]&0xC0 == 0x80 {
		lo--
	}
	for hi < len(text) && text[hi]&0xC0 == 0x80 {
		hi++
	}
	return strings.Join(strings.Fields(text[lo:hi]), " ")
}
