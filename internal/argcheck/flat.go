package argcheck

import (
	"encoding/json"
	"slices"
)

// flatSchema is a tool input schema of the shape most tools have — an
// object whose properties say at most a type and an enum of strings, with
// required names and additionalProperties true or false — checked without
// the library. It only ever accepts: arguments it does not pass go to the
// library, whose verdict stands and whose failure is explained as before.
// It exists for speed: the library allocates for every property it visits
// (25 allocations for `{"text": "hi"}`), this none.
type flatSchema struct {
	props    map[string]flatProp
	required []string
	closed   bool // additionalProperties: false
}

// flatProp is one property of a flatSchema.
type flatProp struct {
	types []string // nil: any value
	enum  []string // nil: any value of the types
}

// annotations are keywords that never fail a value (the library does not
// check format either).
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "format": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
}

// flatOf returns raw (a schema the library resolved) as a flatSchema, or
// nil when it says anything more. Unknown keywords make it nil too: the
// library may check what this does not know.
func flatOf(raw []byte) *flatSchema {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	f := &flatSchema{}
	for k, v := range top {
		switch {
		case annotations[k], k == "$schema", k == "$id":
		case k == "type":
			var t string
			if json.Unmarshal(v, &t) != nil || t != "object" {
				return nil
			}
		case k == "required":
			if json.Unmarshal(v, &f.required) != nil {
				return nil
			}
		case k == "additionalProperties":
			var open bool
			if json.Unmarshal(v, &open) != nil {
				return nil
			}
			f.closed = !open
		case k == "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			f.props = make(map[string]flatProp, len(props))
			for name, p := range props {
				fp, ok := flatPropOf(p)
				if !ok {
					return nil
				}
				f.props[name] = fp
			}
		default:
			return nil
		}
	}
	return f
}

// flatPropOf reads one property's schema, reporting false when it says
// more than a type (or list of types) and an enum of strings.
func flatPropOf(raw json.RawMessage) (flatProp, bool) {
	var kw map[string]json.RawMessage
	if json.Unmarshal(raw, &kw) != nil {
		return flatProp{}, false // true, false: left to the library
	}
	var fp flatProp
	for k, v := range kw {
		switch {
		case annotations[k]:
		case k == "type":
			var one string
			if json.Unmarshal(v, &one) == nil {
				fp.types = []string{one}
			} else if json.Unmarshal(v, &fp.types) != nil || len(fp.types) == 0 {
				return flatProp{}, false
			}
			for _, t := range fp.types {
				if !slices.Contains(jsonTypes, t) {
					return flatProp{}, false
				}
			}
		case k == "enum":
			if json.Unmarshal(v, &fp.enum) != nil || fp.enum == nil {
				return flatProp{}, false // not all strings
			}
		default:
			return flatProp{}, false
		}
	}
	return fp, true
}

// accepts reports whether the arguments obj surely pass the schema.
func (f *flatSchema) accepts(obj map[string]any) bool {
	for _, name := range f.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, v := range obj {
		p, ok := f.props[name]
		if !ok {
			if f.closed {
				return false
			}
			continue
		}
		if p.types != nil && !typeIn(p.types, v) {
			return false
		}
		if p.enum != nil {
			s, ok := v.(string)
			if !ok || !slices.Contains(p.enum, s) {
				return false
			}
		}
	}
	return true
}
