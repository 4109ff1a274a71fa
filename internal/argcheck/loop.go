package argcheck

import (
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// mayLoop reports whether validating a value against s could recurse
// without end: a cycle of keywords that apply to the same value ($ref,
// allOf, anyOf, oneOf, not, if/then/else, dependentSchemas, draft-07
// dependencies), such as {"$defs": {"A": {"anyOf": [{"$ref":
// "#/$defs/A"}]}}}. The schema library follows such a cycle until the
// stack overflows, which is fatal to the daemon, and a tool's schema comes
// from whatever server the user added (issue 21). A reference this
// function cannot follow (to an $id, an anchor, $dynamicRef) counts as a
// possible loop: such a schema is then not used, as one the library cannot
// read is not.
func mayLoop(root *jsonschema.Schema) bool {
	const (
		white = iota
		grey
		black
	)
	color := map[*jsonschema.Schema]int{}
	var visit func(s *jsonschema.Schema) bool
	visit = func(s *jsonschema.Schema) bool {
		if s == nil {
			return false
		}
		switch color[s] {
		case grey:
			return true
		case black:
			return false
		}
		if len(color) > 10000 || s.DynamicRef != "" {
			return true // too large to be worth the risk, or not followed
		}
		color[s] = grey
		next := []*jsonschema.Schema{s.Not, s.If, s.Then, s.Else}
		if s.Ref != "" {
			t, ok := pointerTarget(root, s.Ref)
			if !ok {
				return true
			}
			next = append(next, t)
		}
		next = append(next, s.AllOf...)
		next = append(next, s.AnyOf...)
		next = append(next, s.OneOf...)
		for _, d := range s.DependentSchemas {
			next = append(next, d)
		}
		for _, d := range s.DependencySchemas {
			next = append(next, d)
		}
		for _, n := range next {
			if visit(n) {
				return true
			}
		}
		color[s] = black
		return false
	}
	return !eachSchema(root, func(s *jsonschema.Schema) bool {
		// Another $id is another base URI: references are not followed here.
		return (s.ID == "" || s == root) && !visit(s)
	})
}

// pointerTarget resolves a local reference ("#", "#/$defs/A",
// "#/properties/x/items") in root, by the JSON names of Schema's fields.
func pointerTarget(root *jsonschema.Schema, ref string) (*jsonschema.Schema, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag, err := url.PathUnescape(frag); err == nil && frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor
	}
	cur := reflect.ValueOf(root)
	for _, seg := range strings.Split(frag[1:], "/") {
		seg, _ = url.PathUnescape(seg)
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		switch cur.Kind() {
		case reflect.Pointer:
			if cur.IsNil() || cur.Elem().Kind() != reflect.Struct {
				return nil, false
			}
			f, ok := fieldByJSONName(cur.Elem(), seg)
			if !ok {
				return nil, false
			}
			cur = f
		case reflect.Map:
			cur = cur.MapIndex(reflect.ValueOf(seg))
			if !cur.IsValid() {
				return nil, false
			}
		case reflect.Slice:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= cur.Len() {
				return nil, false
			}
			cur = cur.Index(i)
		default:
			return nil, false
		}
	}
	s, ok := cur.Interface().(*jsonschema.Schema)
	return s, ok && s != nil
}

func fieldByJSONName(v reflect.Value, name string) (reflect.Value, bool) {
	if name == "items" {
		// "items" is one schema or (draft-07) an array of them: the
		// field's tag is "-".
		if s := v.Addr().Interface().(*jsonschema.Schema); s.ItemsArray != nil {
			return reflect.ValueOf(s.ItemsArray), true
		}
		return v.FieldByName("Items"), true
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}
