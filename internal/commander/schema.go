package commander

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemaObj is a JSON Schema as decoded by encoding/json. Tools listed by a
// client (the REPL's case) already hold one, so reading it costs nothing.
type schemaObj = map[string]any

// toolSchema returns the tool's input schema as a map, decoding other
// representations (json.RawMessage, *jsonschema.Schema) once per call.
func toolSchema(t *mcp.Tool) schemaObj {
	if t == nil {
		return nil
	}
	switch s := t.InputSchema.(type) {
	case nil:
		return nil
	case map[string]any:
		return s
	case json.RawMessage:
		return decodeSchema(s)
	case []byte:
		return decodeSchema(s)
	default:
		b, err := json.Marshal(s)
		if err != nil {
			return nil
		}
		return decodeSchema(b)
	}
}

func decodeSchema(b []byte) schemaObj {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// param is one property of an object schema, resolved for display and
// coercion.
type param struct {
	Name     string
	Schema   schemaObj
	Required bool
}

// properties returns the object schema's properties: required ones first in
// the order "required" lists them, then the rest sorted by name (JSON objects
// decoded into maps have lost their order).
func properties(root, s schemaObj) []param {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	req := requiredNames(s)
	out := make([]param, 0, len(props))
	for _, r := range req {
		if p, ok := props[r].(map[string]any); ok {
			out = append(out, param{Name: r, Schema: resolve(root, p), Required: true})
		}
	}
	rest := make([]string, 0, len(props))
	for k := range props {
		if !slices.Contains(req, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		p, _ := props[k].(map[string]any)
		out = append(out, param{Name: k, Schema: resolve(root, p)})
	}
	return out
}

// property looks one property up without building the whole list.
func property(root, s schemaObj, name string) (schemaObj, bool) {
	props, _ := s["properties"].(map[string]any)
	p, ok := props[name]
	if !ok {
		return nil, false
	}
	m, _ := p.(map[string]any)
	return resolve(root, m), true
}

func propertyNames(s schemaObj) []string {
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func requiredNames(s schemaObj) []string {
	raw, _ := s["required"].([]any)
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		if name, ok := r.(string); ok {
			out = append(out, name)
		}
	}
	return out
}

// closedObject reports whether the schema forbids keys it does not list:
// only then is an unknown key an error rather than a typo worth checking.
// Servers differ: many omit additionalProperties yet reject unknown keys, so
// a schema that lists properties is treated as closed unless it says
// additionalProperties is true or a schema.
func closedObject(s schemaObj) bool {
	if _, ok := s["properties"].(map[string]any); !ok {
		return false
	}
	switch ap := s["additionalProperties"].(type) {
	case bool:
		return !ap
	case map[string]any:
		return false
	}
	return true
}

// resolve follows a local "$ref" ("#/$defs/X", "#/definitions/X") one level
// deep or a few levels if they chain; anything else is returned as is.
func resolve(root, s schemaObj) schemaObj {
	for i := 0; i < 8 && s != nil; i++ {
		ref, ok := s["$ref"].(string)
		if !ok || root == nil {
			return s
		}
		var next schemaObj
		for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
			if name, ok := strings.CutPrefix(ref, prefix); ok {
				defs, _ := root[strings.Trim(prefix[2:], "/")].(map[string]any)
				next, _ = defs[name].(map[string]any)
			}
		}
		if next == nil {
			return s
		}
		s = next
	}
	return s
}

// types returns the JSON types a schema allows, from "type" (a string or a
// list), "anyOf"/"oneOf" branches, "const" or "enum" values. Empty means any.
func types(root, s schemaObj) []string { return typesAt(root, s, 0) }

// maxSchemaDepth bounds how deeply types follows anyOf/oneOf branches: a
// server's schema may refer to itself ({"anyOf": [{"$ref": "#"}]}-like
// cycles through $defs), which recursed without end (issue 21).
const maxSchemaDepth = 16

func typesAt(root, s schemaObj, depth int) []string {
	if s == nil || depth > maxSchemaDepth {
		return nil
	}
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, v := range t {
			if name, ok := v.(string); ok {
				out = append(out, name)
			}
		}
		return out
	}
	var out []string
	for _, key := range []string{"anyOf", "oneOf"} {
		branches, _ := s[key].([]any)
		for _, b := range branches {
			bm, _ := b.(map[string]any)
			for _, t := range typesAt(root, resolve(root, bm), depth+1) {
				if !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	vals := enumValues(s)
	for _, v := range vals {
		t := jsonType(v)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
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
	return ""
}

func enumValues(s schemaObj) []any {
	if c, ok := s["const"]; ok {
		return []any{c}
	}
	vals, _ := s["enum"].([]any)
	return vals
}

func allows(ts []string, t string) bool {
	return len(ts) == 0 || slices.Contains(ts, t) || (t == "integer" && slices.Contains(ts, "number"))
}

// typeLabel is the type as help shows it: "string", "integer | null",
// "array of string", "string (uri)".
func typeLabel(root, s schemaObj) string {
	ts := types(root, s)
	if len(ts) == 0 {
		return "any"
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		switch t {
		case "array":
			items, _ := s["items"].(map[string]any)
			if it := types(root, resolve(root, items)); len(it) > 0 {
				t = "array of " + strings.Join(it, "|")
			}
		case "string":
			if f, ok := s["format"].(string); ok && f != "" {
				t = "string (" + f + ")"
			}
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " | ")
}

// rawParam is the parameter that receives free text (`@bash ls -la`,
// `@fs search hello`): the tool's one required parameter when it is a string,
// or, when nothing is required, its only string parameter. "" when none.
// RawParam returns the parameter of t that takes a line's free text (its
// one required string parameter), or "" when it has none.
func RawParam(t *mcp.Tool) string { return rawParam(t) }

func rawParam(t *mcp.Tool) string { return rawParamOf(toolSchema(t)) }

// rawParamOf is rawParam of a decoded input schema.
func rawParamOf(s schemaObj) string {
	if s == nil {
		return ""
	}
	req := requiredNames(s)
	if len(req) == 1 {
		p, ok := property(s, s, req[0])
		if ok && isStringy(types(s, p)) {
			return req[0]
		}
		return ""
	}
	if len(req) > 1 {
		return ""
	}
	props, _ := s["properties"].(map[string]any)
	found := ""
	for name, p := range props {
		if strings.HasPrefix(name, "_") {
			continue // a control parameter (a graph's _resume), never free text
		}
		pm, _ := p.(map[string]any)
		if isStringy(types(s, resolve(s, pm))) {
			if found != "" {
				return ""
			}
			found = name
		}
	}
	return found
}

func isStringy(ts []string) bool { return slices.Contains(ts, "string") }
