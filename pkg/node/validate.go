package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
	"weak"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/suggest"
)

// ValidateArguments checks a call's JSON arguments against the tool's input
// schema before they are sent, so that a wrong call is answered with what
// was wrong (`argument "path": expected string, got number`, `missing
// required argument "path" (string: the file to read)`, `unknown argument
// "pth" (did you mean "path"?)`) rather than with whatever the server makes
// of it. Errors wrap ErrBadArgs. Nil or empty args mean {}.
//
// The schema may be a *jsonschema.Schema (tools of a Go server), a
// map[string]any (tools listed by an MCP client) or raw JSON. A schema that
// cannot be read or resolved (a remote $ref, a draft the schema library
// does not know, a malformed keyword) is not held against the tool: servers
// in the wild ship odd schemas and the server still checks its own input,
// so only the JSON-object shape of the arguments is checked then.
//
// The schema is compiled once per *mcp.Tool (tools are immutable) and a
// common schema — an object whose properties have types, enums, items and
// nested properties — is checked by one scan of the JSON without
// allocating; the full JSON Schema validation runs only for schemas the
// scan does not cover or arguments the scan rejects.
func ValidateArguments(tool *mcp.Tool, args json.RawMessage) error {
	c := compiledFor(tool)
	data := []byte(args)
	if isBlank(data) {
		data = emptyObject
	}
	if c.fast.check(data) {
		return nil
	}
	return c.validateSlow(data)
}

var emptyObject = []byte("{}")

func isBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// compiled is what ValidateArguments keeps per tool.
type compiled struct {
	// tool is the tool compiled; the cache key is its address, which a new
	// tool may reuse once this one is collected.
	tool weak.Pointer[mcp.Tool]
	// schema and resolved are nil when the tool's schema is absent or
	// unusable: then only the object shape is checked.
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	// fast is never nil; a pass with exact set is final.
	fast *fastSchema
}

// schemaCache maps a tool's address to its compiled schema. Keys are
// addresses, not pointers, so the cache does not keep tools alive: a
// cleanup removes the entry once the tool is collected, and each entry's
// weak pointer tells a reused address from the tool it was made for.
var schemaCache = struct {
	// mu guards m.
	mu sync.RWMutex
	m  map[uintptr]*compiled
}{m: make(map[uintptr]*compiled)}

func compiledFor(tool *mcp.Tool) *compiled {
	if tool == nil {
		return noSchema
	}
	key := uintptr(unsafe.Pointer(tool))
	schemaCache.mu.RLock()
	c := schemaCache.m[key]
	schemaCache.mu.RUnlock()
	if c != nil && c.tool.Value() == tool {
		return c
	}
	c = compile(tool.InputSchema)
	c.tool = weak.Make(tool)
	schemaCache.mu.Lock()
	if old := schemaCache.m[key]; old != nil && old.tool.Value() == tool {
		c = old // compiled meanwhile by another call
	} else {
		schemaCache.m[key] = c
		runtime.AddCleanup(tool, evictSchema, key)
	}
	schemaCache.mu.Unlock()
	return c
}

func evictSchema(key uintptr) {
	schemaCache.mu.Lock()
	if c := schemaCache.m[key]; c != nil && c.tool.Value() == nil {
		delete(schemaCache.m, key)
	}
	schemaCache.mu.Unlock()
}

// noSchema accepts any JSON object.
var noSchema = &compiled{fast: &fastSchema{types: kindObject, exact: true}}

// compile reads and resolves a tool's input schema. It never fails: a
// schema it cannot use leaves only the object check.
func compile(in any) *compiled {
	s, err := schemaOf(in)
	if err != nil || s == nil {
		return &compiled{fast: noSchema.fast}
	}
	if !knownTypes(s) {
		// A type the library does not know ("file", "any") fails every
		// value: the tool would be uncallable.
		return &compiled{fast: noSchema.fast}
	}
	if mayLoop(s) {
		// The library would recurse without end (a fatal stack overflow).
		return &compiled{fast: noSchema.fast}
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return &compiled{fast: noSchema.fast}
	}
	fast := compileFast(s, 0)
	fast.types &= kindObject // arguments are always an object
	return &compiled{schema: s, resolved: rs, fast: fast}
}

// supportedDrafts are the $schema values jsonschema-go validates; the
// library refuses any other at validation time.
var supportedDrafts = []string{
	"",
	"https://json-schema.org/draft/2020-12/schema",
	"http://json-schema.org/draft-07/schema#",
	"https://json-schema.org/draft-07/schema#",
}

// schemaOf turns an InputSchema of any form into a *jsonschema.Schema.
func schemaOf(in any) (*jsonschema.Schema, error) {
	var s *jsonschema.Schema
	switch v := in.(type) {
	case nil:
		return nil, nil
	case *jsonschema.Schema:
		s = v
	case jsonschema.Schema:
		s = &v
	default:
		var b []byte
		switch v := in.(type) {
		case json.RawMessage:
			b = v
		case []byte:
			b = v
		default:
			var err error
			if b, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
		if isBlank(b) || string(bytes.TrimSpace(b)) == "null" {
			return nil, nil
		}
		s = new(jsonschema.Schema)
		if err := json.Unmarshal(b, s); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(supportedDrafts, s.Schema) {
		// Older drafts (04, 06) mostly mean the same for the keywords
		// tool schemas use; validate them as 2020-12 rather than not at
		// all. Copy: the schema belongs to the tool.
		cp := *s
		cp.Schema = ""
		s = &cp
	}
	return s, nil
}

// knownTypes reports whether every type keyword in s names a JSON type.
func knownTypes(s *jsonschema.Schema) bool {
	ok := true
	eachSchema(s, 0, func(s *jsonschema.Schema) {
		for _, t := range append([]string{s.Type}, s.Types...) {
			if _, known := kindsByType[t]; t != "" && !known {
				ok = false
			}
		}
	})
	return ok
}

var (
	schemaPtr   = reflect.TypeFor[*jsonschema.Schema]()
	schemaSlice = reflect.TypeFor[[]*jsonschema.Schema]()
	schemaMap   = reflect.TypeFor[map[string]*jsonschema.Schema]()
)

// eachSchema calls fn on s and every schema under it, through every
// field that holds schemas, whatever the keyword.
func eachSchema(s *jsonschema.Schema, depth int, fn func(*jsonschema.Schema)) {
	if s == nil || depth > maxFastDepth {
		return
	}
	fn(s)
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Type() {
		case schemaPtr:
			eachSchema(f.Interface().(*jsonschema.Schema), depth+1, fn)
		case schemaSlice:
			for _, c := range f.Interface().([]*jsonschema.Schema) {
				eachSchema(c, depth+1, fn)
			}
		case schemaMap:
			for _, c := range f.Interface().(map[string]*jsonschema.Schema) {
				eachSchema(c, depth+1, fn)
			}
		}
	}
}

// JSON kinds, as a bit set of what a schema allows.
const (
	kindNull uint8 = 1 << iota
	kindBool
	kindObject
	kindArray
	kindInteger // a number written without fraction or exponent
	kindFraction
	kindString

	kindNumber       = kindInteger | kindFraction
	kindAny    uint8 = 1<<7 - 1
)

var kindsByType = map[string]uint8{
	"null":    kindNull,
	"boolean": kindBool,
	"object":  kindObject,
	"array":   kindArray,
	"integer": kindInteger,
	"number":  kindNumber,
	"string":  kindString,
}

// fastSchema is the part of a schema one scan of the arguments can check.
type fastSchema struct {
	types uint8 // allowed kinds
	// exact is false when the schema has keywords the scan ignores: a pass
	// is then confirmed by the full validation.
	exact    bool
	props    map[string]fastProp
	required uint64 // bits of the required properties
	closed   bool   // additionalProperties: false
	extra    *fastSchema
	items    *fastSchema
	enum     []string // a string enum
	// Bounds; nil when absent. A number equal to a bound goes to the full
	// validation, which compares exactly.
	minimum, maximum, exclMin, exclMax       *float64
	minLength, maxLength, minItems, maxItems *int
}

type fastProp struct {
	schema *fastSchema // nil: anything
	bit    uint64      // 0 unless required
}

// maxFastDepth bounds the nesting the scan follows, in schemas and in
// values; deeper ones go to the full validation.
const maxFastDepth = 64

// annotationFields are Schema fields that do not constrain a value (or
// only through a $ref, which makes the referring schema inexact).
var annotationFields = map[string]bool{
	"ID": true, "Schema": true, "Comment": true, "Defs": true, "Definitions": true,
	"Anchor": true, "DynamicAnchor": true, "Vocabulary": true,
	"Title": true, "Description": true, "Default": true, "Deprecated": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true,
	"ContentEncoding": true, "ContentMediaType": true, "ContentSchema": true,
	"Format": true, "Extra": true, "PropertyOrder": true,
}

// fastFields are the keywords the scan checks.
var fastFields = map[string]bool{
	"Type": true, "Types": true, "Enum": true, "Properties": true,
	"Required": true, "AdditionalProperties": true, "Items": true,
	"Minimum": true, "Maximum": true, "ExclusiveMinimum": true, "ExclusiveMaximum": true,
	"MinLength": true, "MaxLength": true, "MinItems": true, "MaxItems": true,
}

func compileFast(s *jsonschema.Schema, depth int) *fastSchema {
	f := &fastSchema{types: kindAny, exact: true}
	if s == nil || depth > maxFastDepth {
		f.exact = false
		return f
	}
	// Any keyword outside the two lists above makes the schema inexact;
	// reflection keeps this true when the library learns new keywords.
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if !annotationFields[name] && !fastFields[name] && !v.Field(i).IsZero() {
			f.exact = false
		}
	}
	if s.Type != "" || s.Types != nil {
		f.types = 0
		types := s.Types
		if s.Type != "" {
			types = []string{s.Type}
		}
		for _, t := range types {
			f.types |= kindsByType[t]
		}
	}
	if s.Enum != nil {
		for _, e := range s.Enum {
			str, ok := e.(string)
			if !ok {
				f.exact, f.enum = false, nil
				break
			}
			f.enum = append(f.enum, str)
		}
		if f.enum == nil && f.exact {
			f.enum = []string{} // enum: [] accepts nothing
		}
	}
	if len(s.Properties) > 0 || len(s.Required) > 0 {
		f.props = make(map[string]fastProp, len(s.Properties)+len(s.Required))
		for name, ps := range s.Properties {
			f.props[name] = fastProp{schema: compileFast(ps, depth+1)}
		}
		if len(s.Required) > 64 {
			f.exact = false
		} else {
			for i, name := range s.Required {
				p := f.props[name]
				p.bit = 1 << i
				f.props[name] = p
				f.required |= p.bit
			}
		}
	}
	switch ap := s.AdditionalProperties; {
	case ap == nil:
	case isFalseSchema(ap):
		f.closed = true
	default:
		f.extra = compileFast(ap, depth+1)
	}
	if s.Items != nil {
		f.items = compileFast(s.Items, depth+1)
	}
	f.minimum, f.maximum, f.exclMin, f.exclMax = s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum
	f.minLength, f.maxLength, f.minItems, f.maxItems = s.MinLength, s.MaxLength, s.MinItems, s.MaxItems
	return f
}

// isFalseSchema reports whether s is the schema `false`, which the library
// reads as {"not": {}}.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	cp := *s
	cp.Not = nil
	return reflect.ValueOf(cp).IsZero()
}

// check reports whether data is definitely valid. False means "not sure":
// invalid, malformed, or beyond what the scan checks.
func (f *fastSchema) check(data []byte) bool {
	s := scanner{b: data, exact: true}
	if !s.value(f) {
		return false
	}
	s.ws()
	return s.i == len(s.b) && s.exact
}

// scanner walks JSON text once, checking syntax and a fastSchema. It
// allocates nothing.
type scanner struct {
	b     []byte
	i     int
	depth int
	exact bool // false once an inexact schema was applied
}

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

// value scans one value against f (nil: anything). False means not sure.
func (s *scanner) value(f *fastSchema) bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	if f != nil && !f.exact {
		s.exact = false
	}
	var kind uint8
	switch c := s.b[s.i]; {
	case c == '{':
		kind = kindObject
		if f != nil && f.types&kind == 0 {
			return false
		}
		return s.object(f)
	case c == '[':
		kind = kindArray
		if f != nil && f.types&kind == 0 {
			return false
		}
		return s.array(f)
	case c == '"':
		start, end, escaped, ok := s.str()
		if !ok || f == nil {
			return ok
		}
		if f.types&kindString == 0 {
			return false
		}
		if f.minLength != nil || f.maxLength != nil {
			if escaped {
				return false // the length is of the decoded string
			}
			// The decoder turns each invalid byte into one U+FFFD, as
			// RuneCount counts it.
			n := utf8.RuneCount(s.b[start:end])
			if f.minLength != nil && n < *f.minLength || f.maxLength != nil && n > *f.maxLength {
				return false
			}
		}
		if f.enum != nil {
			if escaped {
				return false
			}
			for _, e := range f.enum {
				if e == string(s.b[start:end]) {
					return true
				}
			}
			return false
		}
		return true
	case c == 't':
		kind = kindBool
		if !s.literal("true") {
			return false
		}
	case c == 'f':
		kind = kindBool
		if !s.literal("false") {
			return false
		}
	case c == 'n':
		kind = kindNull
		if !s.literal("null") {
			return false
		}
	case c == '-' || '0' <= c && c <= '9':
		start := s.i
		integer, ok := s.number()
		if !ok || !fitsFloat64(s.b[start:s.i]) || f != nil && !f.numberInBounds(s.b[start:s.i]) {
			return false
		}
		kind = kindFraction
		if integer {
			kind = kindInteger
		}
	default:
		return false
	}
	return f == nil || f.types&kind != 0 && f.enum == nil
}

// fitsFloat64 reports whether a JSON number decodes into a float64, as the
// full validation (and many servers) decode it: 1e400 does not.
func fitsFloat64(num []byte) bool {
	if len(num) < 300 && bytes.IndexAny(num, "eE") < 0 {
		return true
	}
	_, err := strconv.ParseFloat(unsafe.String(&num[0], len(num)), 64)
	return err == nil
}

// numberInBounds reports whether the number num is surely within f's
// bounds. Rounding to float64 is monotonic, so a rounded value strictly
// inside a bound means the exact one is too; a tie is left to the full
// validation, which compares exactly.
func (f *fastSchema) numberInBounds(num []byte) bool {
	if f.minimum == nil && f.maximum == nil && f.exclMin == nil && f.exclMax == nil {
		return true
	}
	v, err := strconv.ParseFloat(unsafe.String(&num[0], len(num)), 64)
	if err != nil {
		return false
	}
	return (f.minimum == nil || v > *f.minimum) && (f.maximum == nil || v < *f.maximum) &&
		(f.exclMin == nil || v > *f.exclMin) && (f.exclMax == nil || v < *f.exclMax)
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *scanner) object(f *fastSchema) bool {
	s.i++ // {
	if s.depth++; s.depth > maxFastDepth {
		return false
	}
	var seen uint64
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return false
			}
			start, end, escaped, ok := s.str()
			if !ok {
				return false
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			var child *fastSchema
			if f != nil {
				if escaped {
					return false // the key would need decoding
				}
				if p, ok := f.props[string(s.b[start:end])]; ok {
					child = p.schema
					seen |= p.bit
				} else if f.closed {
					return false
				} else {
					child = f.extra
				}
			}
			if !s.value(child) {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] != '}' {
				return false
			}
			s.i++
			break
		}
	}
	s.depth--
	return f == nil || seen&f.required == f.required
}

func (s *scanner) array(f *fastSchema) bool {
	s.i++ // [
	if s.depth++; s.depth > maxFastDepth {
		return false
	}
	var item *fastSchema
	if f != nil {
		item = f.items
	}
	n := 0
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
	} else {
		for {
			if !s.value(item) {
				return false
			}
			n++
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] != ']' {
				return false
			}
			s.i++
			break
		}
	}
	s.depth--
	return f == nil || (f.minItems == nil || n >= *f.minItems) && (f.maxItems == nil || n <= *f.maxItems)
}

// str scans a string and returns the bounds of its contents.
func (s *scanner) str() (start, end int, escaped, ok bool) {
	s.i++ // "
	start = s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			end = s.i
			s.i++
			return start, end, escaped, true
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return 0, 0, false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return 0, 0, false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, 0, false, false
					}
				}
				s.i += 5
			default:
				return 0, 0, false, false
			}
		case c < 0x20:
			return 0, 0, false, false
		default:
			s.i++
		}
	}
	return 0, 0, false, false
}

// number scans a JSON number; integer is false when it has a fraction or
// an exponent (1.0 is still an integer to JSON Schema: the full
// validation decides those).
func (s *scanner) number() (integer, ok bool) {
	digits := func() bool {
		n := s.i
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if !digits() {
		return false, false
	}
	integer = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return false, false
		}
		integer = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return false, false
		}
		integer = false
	}
	return integer, true
}

// validateSlow decodes the arguments and runs the full validation; on a
// failure it explains the problem in terms of argument names.
func (c *compiled) validateSlow(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			if num, ok := strings.CutPrefix(typeErr.Value, "number "); ok {
				// Valid JSON, but beyond float64: the full validation (and
				// most servers) cannot read it.
				return fmt.Errorf("%w: the number %s is out of range; send numbers within ±1.8e308", ErrBadArgs, num)
			}
		}
		return fmt.Errorf("%w: arguments are not valid JSON (%v); send a JSON object such as {\"name\": \"value\"}", ErrBadArgs, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%w: arguments must be a JSON object such as {\"name\": \"value\"}, got %s", ErrBadArgs, describeValue(v))
	}
	if c.resolved == nil {
		return nil
	}
	err := c.resolved.Validate(v)
	if err == nil {
		return nil
	}
	var p problems
	p.check(c.schema, v, "")
	if len(p.list) == 0 {
		p.list = append(p.list, libraryProblem(err))
	}
	return fmt.Errorf("%w: %s", ErrBadArgs, p.String())
}

// maxProblems is how many problems one error lists.
const maxProblems = 5

type problems struct {
	list []string
	more int
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) >= maxProblems {
		p.more++
		return
	}
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) String() string {
	s := strings.Join(p.list, "; ")
	if p.more > 0 {
		s += fmt.Sprintf("; and %d more", p.more)
	}
	return s
}

// check walks the value along the schema's unconditional keywords
// (properties, items, additionalProperties) and records the failures it
// can name precisely. Keywords under anyOf, $ref and the like are left to
// the library's message.
func (p *problems) check(s *jsonschema.Schema, v any, path string) {
	if s == nil {
		return
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
		checkNumber(p, s, v, path)
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
				p.add("%s: must match the pattern %q, got %q", argName(path), s.Pattern, v)
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
				p.check(s.Items, item, path+"["+strconv.Itoa(i)+"]")
			}
		}
	case map[string]any:
		p.checkObject(s, v, path)
	}
}

func (p *problems) checkObject(s *jsonschema.Schema, obj map[string]any, path string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child := joinPath(path, k)
		if ps, ok := s.Properties[k]; ok {
			p.check(ps, obj[k], child)
			continue
		}
		if len(s.PatternProperties) > 0 {
			continue // the key may match a pattern: the library decides
		}
		if s.AdditionalProperties != nil && isFalseSchema(s.AdditionalProperties) {
			p.add("unknown argument %q%s", child, suggestion(k, s.Properties))
			continue
		}
		p.check(s.AdditionalProperties, obj[k], child)
	}
	for _, r := range s.Required {
		if _, ok := obj[r]; ok {
			continue
		}
		p.add("missing required argument %q%s", joinPath(path, r), describeParam(s.Properties[r]))
	}
}

func checkNumber(p *problems, s *jsonschema.Schema, v float64, path string) {
	name := argName(path)
	if s.Minimum != nil && v < *s.Minimum {
		p.add("%s: must be at least %s, got %s", name, formatNumber(*s.Minimum), formatNumber(v))
	}
	if s.Maximum != nil && v > *s.Maximum {
		p.add("%s: must be at most %s, got %s", name, formatNumber(*s.Maximum), formatNumber(v))
	}
	if s.ExclusiveMinimum != nil && v <= *s.ExclusiveMinimum {
		p.add("%s: must be greater than %s, got %s", name, formatNumber(*s.ExclusiveMinimum), formatNumber(v))
	}
	if s.ExclusiveMaximum != nil && v >= *s.ExclusiveMaximum {
		p.add("%s: must be less than %s, got %s", name, formatNumber(*s.ExclusiveMaximum), formatNumber(v))
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func argName(path string) string {
	if path == "" {
		return "arguments"
	}
	return "argument " + strconv.Quote(path)
}

// typeMatches applies the type keyword as JSON Schema does: an integral
// number is an integer, and "number" includes integers.
func typeMatches(s *jsonschema.Schema, v any) bool {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if types == nil {
		return true
	}
	got := jsonKind(v)
	for _, t := range types {
		if t == got || t == "number" && got == "integer" {
			return true
		}
	}
	return false
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
	k := jsonKind(v)
	switch k {
	case "integer":
		return "number"
	case "number":
		return "number " + formatNumber(v.(float64))
	}
	return k
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
	if len(b) > 80 {
		return string(b[:utf8Cut(b, 77)]) + "..."
	}
	return string(b)
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
	if len(d) > 80 {
		d = d[:utf8Cut([]byte(d), 77)] + "..."
	}
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
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return " (known arguments: " + strings.Join(quoted, ", ") + ")"
}

// libraryProblem shortens jsonschema-go's message ("validating root:
// validating /properties/n: minimum: …") to the argument and the keyword
// that failed.
func libraryProblem(err error) string {
	msg := err.Error()
	var path string
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		loc, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if p := pointerToPath(loc); p != "" {
			path = p
		}
		msg = tail
	}
	msg = strings.ReplaceAll(msg, "\n", "; ")
	if path == "" {
		return "arguments do not match the tool's schema: " + msg
	}
	return argName(path) + ": " + msg
}

// pointerToPath turns a schema pointer such as
// /properties/edits/items/properties/oldText into edits[].oldText.
func pointerToPath(ptr string) string {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			if i+1 < len(parts) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[i+1]))
				i++
			}
		case "items":
			if b.Len() > 0 {
				b.WriteString("[]")
			}
		}
	}
	return b.String()
}
