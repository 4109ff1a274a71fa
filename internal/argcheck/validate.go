package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/suggest"
	"github.com/nerve-dev/nerve/pkg/api"
)

// Schema is one tool's input schema, read and resolved once, that
// checks the arguments of the tool's calls before they are sent. Keep it
// beside the tool, as the session's tool cache does (and as the MCP SDK's
// server keeps a tool's resolved schema). It is safe for concurrent use.
//
// Validation is jsonschema-go's; a failure is explained in terms of
// argument names (`argument "path": expected string, got number`,
// `missing required argument "path" (string: the file to read)`,
// `unknown argument "pth" (did you mean "path"?)`).
type Schema struct {
	// schema and resolved are nil when the tool has no schema or one the
	// library cannot use: then only basic holds.
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	draft7   bool // $ref hides its siblings
	// basic is the schema's top level read leniently — its properties
	// (type and description only), required names and
	// additionalProperties: false — for the checks that apply whatever the
	// rest of the schema says.
	basic      *jsonschema.Schema
	unresolved error
	// flat is the schema again when it has the common flat shape: the
	// arguments it accepts need not go to the library.
	flat *flatSchema
}

// New reads and resolves tool's input schema. The schema may be a
// *jsonschema.Schema (tools of a Go server), a map[string]any (tools listed
// by an MCP client) or raw JSON. A schema the library cannot use — a remote
// or dangling $ref, a type that is not a JSON type, a bad pattern, a
// reference cycle that would recurse without end — does not make the tool
// uncallable: servers ship odd schemas and still check their own input, so
// only the basic checks apply then (a JSON object, required names, unknown
// names when additionalProperties is false), and Unresolved says why.
func New(tool *mcp.Tool) *Schema {
	a := &Schema{basic: &jsonschema.Schema{}}
	if tool == nil {
		return a
	}
	raw, err := schemaJSON(tool.InputSchema)
	if err != nil || raw == nil {
		a.unresolved = err
		return a
	}
	a.basic = basicSchema(raw)
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, s); err != nil {
		a.unresolved = fmt.Errorf("reading the input schema: %w", err)
		return a
	}
	switch s.Schema {
	case "", "https://json-schema.org/draft/2020-12/schema":
	case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
		a.draft7 = true
	default:
		// Older drafts (04, 06) mostly mean the same for the keywords tool
		// schemas use; the library refuses them at every validation.
		s.Schema = ""
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		a.unresolved = fmt.Errorf("resolving the input schema: %w", err)
		return a
	}
	if t := unknownType(s); t != "" {
		// The library would fail every value: the tool would be uncallable.
		a.unresolved = fmt.Errorf("the input schema names type %q, which is not a JSON type", t)
		return a
	}
	if mayLoop(s) {
		a.unresolved = errors.New("the input schema refers to itself without descending into the value (validation would recurse without end)")
		return a
	}
	a.schema, a.resolved = s, rs
	a.flat = flatOf(raw)
	return a
}

// Unresolved says why only the basic checks apply, or is nil when the
// whole schema does (or the tool has none).
func (a *Schema) Unresolved() error { return a.unresolved }

// Validate checks args against tool's input schema, read for this
// call only: callers that check a tool more than once keep its Schema.
func Validate(tool *mcp.Tool, args json.RawMessage) error {
	return New(tool).Validate(args)
}

// maxDepth is how deep arguments may nest: the MCP SDK's limit for a
// whole message (its internal/json refuses 1000), so no MCP server could be
// sent deeper ones anyway. jsonschema-go recurses with the value and takes
// about a second of CPU for 10,000 levels (encoding/json's limit).
const maxDepth = 1000

// Validate checks a call's JSON arguments. Nil or empty args mean {}.
// Errors wrap api.ErrBadArgs.
func (a *Schema) Validate(args json.RawMessage) error {
	data := []byte(args)
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if depth(data) > maxDepth {
		return fmt.Errorf("%w: arguments nest deeper than %d levels; send flatter arguments", api.ErrBadArgs, maxDepth)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return decodeError(err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: arguments must be a JSON object such as {\"name\": \"value\"}, got %s", api.ErrBadArgs, describeValue(v))
	}
	if a.resolved == nil {
		p := problems{shallow: true}
		p.checkObject(a.basic, obj, nil)
		return p.err()
	}
	if a.flat != nil && a.flat.accepts(obj) {
		return nil
	}
	err := a.resolved.Validate(v)
	if err == nil {
		return nil
	}
	p := problems{root: a.schema, draft7: a.draft7}
	p.check(a.schema, v, nil)
	if len(p.list) == 0 {
		p.add("%s", libraryProblem(err))
	}
	return p.err()
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if num, ok := strings.CutPrefix(typeErr.Value, "number "); ok {
			// Valid JSON, but beyond float64: the validation (and most
			// servers) cannot read it.
			return fmt.Errorf("%w: the number %s is out of range; send numbers within ±1.8e308", api.ErrBadArgs, cut(num))
		}
	}
	return fmt.Errorf("%w: arguments are not valid JSON (%v); send a JSON object such as {\"name\": \"value\"}", api.ErrBadArgs, err)
}

// depth is how deep the brackets of JSON text nest (strings skipped); it
// reads text that is not JSON too.
func depth(data []byte) int {
	d, most, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// schemaJSON is an InputSchema of any form as JSON text; nil when there is
// no schema.
func schemaJSON(in any) ([]byte, error) {
	var b []byte
	switch v := in.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("reading the input schema: %w", err)
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	if b[0] != '{' {
		return nil, errors.New("the input schema is not a JSON object")
	}
	return b, nil
}

// basicSchema reads the top level of a schema leniently: a keyword of an
// unexpected shape is left out, never an error.
func basicSchema(raw []byte) *jsonschema.Schema {
	var top struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	// Unmarshal skips a field of the wrong type and fills the others.
	_ = json.Unmarshal(raw, &top)
	b := &jsonschema.Schema{Properties: make(map[string]*jsonschema.Schema, len(top.Properties))}
	for _, r := range top.Required {
		if r != "" {
			b.Required = append(b.Required, r)
		}
	}
	for name, p := range top.Properties {
		var d struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		}
		_ = json.Unmarshal(p, &d)
		b.Properties[name] = &jsonschema.Schema{Type: d.Type, Description: d.Description}
	}
	if top.AdditionalProperties != nil && !*top.AdditionalProperties {
		b.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	return b
}

var jsonTypes = []string{"null", "boolean", "object", "array", "integer", "number", "string"}

// unknownType returns a type keyword in s that names no JSON type, or "".
func unknownType(s *jsonschema.Schema) (bad string) {
	eachSchema(s, func(s *jsonschema.Schema) bool {
		for _, t := range append([]string{s.Type}, s.Types...) {
			if t != "" && !slices.Contains(jsonTypes, t) {
				bad = t
				return false
			}
		}
		return true
	})
	return bad
}

var (
	schemaPtr   = reflect.TypeFor[*jsonschema.Schema]()
	schemaSlice = reflect.TypeFor[[]*jsonschema.Schema]()
	schemaMap   = reflect.TypeFor[map[string]*jsonschema.Schema]()
)

// eachSchema calls fn on s and every schema under it, through every field
// that holds schemas whatever the keyword, until fn returns false.
func eachSchema(s *jsonschema.Schema, fn func(*jsonschema.Schema) bool) bool {
	if s == nil {
		return true
	}
	if !fn(s) {
		return false
	}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		var children []*jsonschema.Schema
		switch f := v.Field(i); f.Type() {
		case schemaPtr:
			children = []*jsonschema.Schema{f.Interface().(*jsonschema.Schema)}
		case schemaSlice:
			children = f.Interface().([]*jsonschema.Schema)
		case schemaMap:
			for _, c := range f.Interface().(map[string]*jsonschema.Schema) {
				children = append(children, c)
			}
		}
		for _, c := range children {
			if !eachSchema(c, fn) {
				return false
			}
		}
	}
	return true
}

// isFalseSchema reports whether s is the schema `false`, which the library
// reads as {"not": {}}.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	cp := *s
	cp.Not = nil
	return reflect.ValueOf(cp).IsZero()
}

// maxProblems is how many problems one error lists; maxProblemLen bounds
// each (a value, key or pattern may be megabytes long).
const (
	maxProblems   = 5
	maxProblemLen = 300
)

// maxWalk is how deep into the arguments the explanation goes; a problem
// deeper is told by the library's message.
const maxWalk = 64

// problems explains, once the library said the arguments are invalid, what
// is wrong in terms a person reads: it walks the value along the schema's
// unconditional keywords (properties, items, additionalProperties, $ref)
// and names the failures it can name precisely. Keywords under anyOf,
// oneOf and the like are left to the library's message.
type problems struct {
	root    *jsonschema.Schema // for $ref
	draft7  bool
	shallow bool // basic checks: the top level's names only
	list    []string
	more    int
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) >= maxProblems {
		p.more++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxProblemLen {
		msg = prefix(msg, maxProblemLen-3) + "..."
	}
	p.list = append(p.list, msg)
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	s := strings.Join(p.list, "; ")
	if p.more > 0 {
		s += fmt.Sprintf("; and %d more", p.more)
	}
	return fmt.Errorf("%w: %s", api.ErrBadArgs, s)
}

func (p *problems) check(s *jsonschema.Schema, v any, path []string) {
	if s == nil || len(path) > maxWalk {
		return
	}
	if s.Ref != "" {
		// mayLoop made sure that following references ends.
		if t, ok := pointerTarget(p.root, s.Ref); ok {
			p.check(t, v, path)
		}
		if p.draft7 {
			return // draft-07: "All other properties in a "$ref" object MUST be ignored."
		}
	}
	if !typeMatches(s, v) {
		p.add("%s: expected %s, got %s", argName(path), typeList(s), describeKind(v))
		return
	}
	if alts := append(slices.Clip(s.AnyOf), s.OneOf...); len(alts) > 0 && !slices.ContainsFunc(alts, func(a *jsonschema.Schema) bool {
		return a == nil || (a.Type == "" && a.Types == nil) || typeMatches(a, v)
	}) {
		var names []string
		for _, a := range alts {
			for _, t := range append([]string{a.Type}, a.Types...) {
				if t != "" && !slices.Contains(names, t) {
					names = append(names, t)
				}
			}
		}
		p.add("%s: expected %s, got %s", argName(path), strings.Join(names, " or "), describeKind(v))
		return
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		p.add("%s: expected one of %s, got %s", argName(path), enumList(s.Enum), compactJSON(v))
		return
	}
	if s.Const != nil && !jsonEqual(*s.Const, v) {
		p.add("%s: must be %s, got %s", argName(path), compactJSON(*s.Const), compactJSON(v))
		return
	}
	switch v := v.(type) {
	case float64:
		p.checkNumber(s, v, path)
	case string:
		n := utf8.RuneCountInString(v)
		if s.MinLength != nil && n < *s.MinLength {
			p.add("%s: must be at least %d characters long, got %d", argName(path), *s.MinLength, n)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			p.add("%s: must be at most %d characters long, got %d", argName(path), *s.MaxLength, n)
		}
		if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(v) {
				p.add("%s: must match the pattern %s, got %s", argName(path), quote(s.Pattern), quote(v))
			}
		}
	case []any:
		if s.MinItems != nil && len(v) < *s.MinItems {
			p.add("%s: must have at least %d items, got %d", argName(path), *s.MinItems, len(v))
		}
		if s.MaxItems != nil && len(v) > *s.MaxItems {
			p.add("%s: must have at most %d items, got %d", argName(path), *s.MaxItems, len(v))
		}
		if s.Items != nil && s.PrefixItems == nil && s.ItemsArray == nil {
			for i, item := range v {
				p.check(s.Items, item, append(path, "["+strconv.Itoa(i)+"]"))
			}
		}
	case map[string]any:
		p.checkObject(s, v, path)
	}
}

func (p *problems) checkObject(s *jsonschema.Schema, obj map[string]any, path []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child := append(path, k)
		if ps, ok := s.Properties[k]; ok {
			if !p.shallow {
				p.check(ps, obj[k], child)
			}
			continue
		}
		if len(s.PatternProperties) > 0 {
			continue // the key may match a pattern: the library decides
		}
		if isFalseSchema(s.AdditionalProperties) {
			p.add("unknown argument %s%s", quote(joinPath(child)), suggestion(k, s.Properties))
			continue
		}
		if !p.shallow {
			p.check(s.AdditionalProperties, obj[k], child)
		}
	}
	for _, r := range s.Required {
		if _, ok := obj[r]; ok {
			continue
		}
		p.add("missing required argument %s%s", quote(joinPath(append(path, r))), describeParam(s.Properties[r]))
	}
}

func (p *problems) checkNumber(s *jsonschema.Schema, v float64, path []string) {
	for _, b := range []struct {
		bound *float64
		fails func(v, b float64) bool
		must  string
	}{
		{s.Minimum, func(v, b float64) bool { return v < b }, "at least"},
		{s.Maximum, func(v, b float64) bool { return v > b }, "at most"},
		{s.ExclusiveMinimum, func(v, b float64) bool { return v <= b }, "greater than"},
		{s.ExclusiveMaximum, func(v, b float64) bool { return v >= b }, "less than"},
	} {
		if b.bound != nil && b.fails(v, *b.bound) {
			p.add("%s: must be %s %s, got %s", argName(path), b.must, formatNumber(*b.bound), formatNumber(v))
		}
	}
	// Exactly as the library decides it: in rationals, not in floats.
	if m := s.MultipleOf; m != nil && *m > 0 && !new(big.Rat).Quo(new(big.Rat).SetFloat64(v), new(big.Rat).SetFloat64(*m)).IsInt() {
		p.add("%s: must be a multiple of %s, got %s", argName(path), formatNumber(*m), formatNumber(v))
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// joinPath renders a path as people write it: edits[1].newText.
func joinPath(path []string) string {
	var b strings.Builder
	for i, e := range path {
		if i > 0 && !strings.HasPrefix(e, "[") {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

func argName(path []string) string {
	if len(path) == 0 {
		return "arguments"
	}
	return "argument " + quote(joinPath(path))
}

// quote is strconv.Quote of at most 80 bytes of s.
func quote(s string) string { return strconv.Quote(cut(s)) }

// cut is s, or its first 77 bytes and "..." when it is longer than 80.
func cut(s string) string {
	if len(s) > 80 {
		return prefix(s, 77) + "..."
	}
	return s
}

// prefix is at most the first n bytes of s, not cut inside a UTF-8
// sequence (invalid input is cut anywhere).
func prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}

// typeMatches applies the type keyword as JSON Schema does: an integral
// number is an integer, and "number" includes integers.
func typeMatches(s *jsonschema.Schema, v any) bool {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	return types == nil || typeIn(types, v)
}

// typeIn reports whether v has one of the JSON types, as JSON Schema
// counts them: an integral number is an integer, and "number" includes
// integers.
func typeIn(types []string, v any) bool {
	got := jsonKind(v)
	return slices.Contains(types, got) || got == "integer" && slices.Contains(types, "number")
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, frac := math.Modf(v); frac == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// describeKind names v's type the way people read a schema: integers are
// numbers, unless a fraction was the problem.
func describeKind(v any) string {
	switch k := jsonKind(v); k {
	case "integer":
		return "number"
	case "number":
		return "number " + formatNumber(v.(float64))
	default:
		return k
	}
}

func describeValue(v any) string {
	switch v.(type) {
	case string, float64, bool:
		return describeKind(v) + " " + compactJSON(v)
	}
	return describeKind(v)
}

func typeList(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	return strings.Join(s.Types, " or ")
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = compactJSON(e)
	}
	return strings.Join(parts, ", ")
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return cut(string(b))
}

// jsonEqual compares two JSON values by their encoding (maps encode with
// sorted keys), which also equates the ints of a Go schema with the
// float64s of decoded arguments.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// describeParam is " (type: description)" for a missing argument.
func describeParam(s *jsonschema.Schema) string {
	if s == nil {
		return ""
	}
	t := typeList(s)
	d, _, _ := strings.Cut(strings.TrimSpace(s.Description), "\n")
	d = cut(d)
	switch {
	case t != "" && d != "":
		return " (" + t + ": " + d + ")"
	case t != "":
		return " (" + t + ")"
	case d != "":
		return " (" + d + ")"
	}
	return ""
}

// suggestion names the closest known property to an unknown one, or lists
// the known ones when none is close.
func suggestion(key string, props map[string]*jsonschema.Schema) string {
	if len(props) == 0 {
		return " (this takes no arguments)"
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	if best := suggest.Closest(key, names); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", quote(best))
	}
	for i, n := range names {
		names[i] = quote(n)
	}
	return " (known arguments: " + strings.Join(names, ", ") + ")"
}

// keywordProblems say what the logic keywords the walk leaves to the
// library mean to the caller.
var keywordProblems = map[string]string{
	"oneOf: validated against both": "matches more than one of the forms allowed (oneOf)",
	"oneOf: did not validate":       "matches none of the forms allowed (oneOf)",
	"anyOf:":                        "matches none of the forms allowed (anyOf)",
	"not:":                          "has a form the tool forbids (not)",
}

// libraryProblem turns jsonschema-go's message ("validating root:
// validating /properties/n: oneOf: …") into the argument it is about (from
// the schema location) and what failed.
func libraryProblem(err error) string {
	msg := err.Error()
	var path []string
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		loc, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if p := pointerToPath(loc); p != nil {
			path = p
		}
		msg = tail
	}
	for prefix, say := range keywordProblems {
		if strings.HasPrefix(msg, prefix) {
			return argName(path) + ": " + say
		}
	}
	msg = strings.ReplaceAll(msg, "\n", "; ")
	if path == nil {
		return "arguments do not match the tool's schema: " + msg
	}
	return argName(path) + ": " + msg
}

// pointerToPath turns a schema location such as
// /properties/edits/items/properties/oldText into edits[].oldText.
func pointerToPath(ptr string) []string {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var path []string
	for i := 0; i < len(parts); i++ {
		switch {
		case parts[i] == "properties" && i+1 < len(parts):
			path = append(path, strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[i+1]))
			i++
		case parts[i] == "items" && path != nil:
			path = append(path, "[]")
		}
	}
	return path
}
