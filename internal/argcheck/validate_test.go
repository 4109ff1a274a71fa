package argcheck

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
)

// readFileSchema is what a client sees for server-filesystem's read_file.
const readFileSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "the file to read"},
		"head": {"type": "number", "description": "only the first N lines"},
		"tail": {"type": "integer"}
	},
	"required": ["path"],
	"additionalProperties": false
}`

const editSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"edits": {"type": "array", "items": {
			"type": "object",
			"properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
			"required": ["oldText", "newText"],
			"additionalProperties": false
		}},
		"mode": {"type": "string", "enum": ["replace", "append"]},
		"dryRun": {"type": ["boolean", "null"], "default": false},
		"count": {"type": "integer", "minimum": 1, "maximum": 10},
		"name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
		"tags": {"type": "array", "maxItems": 2}
	},
	"required": ["path"]
}`

// clientTool returns a tool as an MCP client lists it: the schema is a
// map[string]any.
func clientTool(t testing.TB, schema string) *mcp.Tool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	return &mcp.Tool{Name: "t", InputSchema: m}
}

func TestValidateArguments(t *testing.T) {
	tests := []struct {
		name, schema, args string
		want               string // "" for valid; else the message after "invalid arguments: "
	}{
		{"valid", readFileSchema, `{"path": "/tmp/a"}`, ""},
		{"valid all", readFileSchema, `{"path": "/tmp/a", "head": 2.5, "tail": 3}`, ""},
		{"integer written as 3.0", readFileSchema, `{"path": "/tmp/a", "tail": 3.0}`, ""},
		{"escaped key", readFileSchema, `{"p\u0061th": "/tmp/a"}`, ""},
		{"wrong type", readFileSchema, `{"path": 3}`, `argument "path": expected string, got number`},
		{"fraction for integer", readFileSchema, `{"path": "a", "tail": 1.5}`, `argument "tail": expected integer, got number 1.5`},
		{"null", readFileSchema, `{"path": null}`, `argument "path": expected string, got null`},
		{"missing", readFileSchema, `{}`, `missing required argument "path" (string: the file to read)`},
		{"empty args", readFileSchema, ``, `missing required argument "path" (string: the file to read)`},
		{"typo", readFileSchema, `{"pth": "/tmp/a"}`, `unknown argument "pth" (did you mean "path"?); missing required argument "path" (string: the file to read)`},
		{"unknown far", readFileSchema, `{"path": "a", "recursive": true}`, `unknown argument "recursive" (known arguments: "head", "path", "tail")`},
		{"several", readFileSchema, `{"path": 1, "head": "x"}`, `argument "head": expected number, got string; argument "path": expected string, got number`},
		{"array args", readFileSchema, `["/tmp/a"]`, `arguments must be a JSON object such as {"name": "value"}, got array`},
		{"string args", readFileSchema, `"/tmp/a"`, `arguments must be a JSON object such as {"name": "value"}, got string "/tmp/a"`},
		{"null args", readFileSchema, `null`, `arguments must be a JSON object such as {"name": "value"}, got null`},
		{"bad JSON", readFileSchema, `{"path": "/tmp/a"`, `arguments are not valid JSON (unexpected end of JSON input); send a JSON object such as {"name": "value"}`},
		{"trailing data", readFileSchema, `{"path": "a"} x`, `arguments are not valid JSON (invalid character 'x' after top-level value); send a JSON object such as {"name": "value"}`},

		{"huge number", readFileSchema, `{"path": "a", "head": -1e400}`, `the number -1e400 is out of range; send numbers within ±1.8e308`},

		{"nested valid", editSchema, `{"path": "a", "edits": [{"oldText": "x", "newText": "y"}], "mode": "append", "dryRun": null, "count": 3, "name": "ab", "tags": []}`, ""},
		{"nested missing", editSchema, `{"path": "a", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "x"}]}`, `missing required argument "edits[1].newText" (string)`},
		{"nested type", editSchema, `{"path": "a", "edits": [{"oldText": 1, "newText": "y"}]}`, `argument "edits[0].oldText": expected string, got number`},
		{"nested unknown", editSchema, `{"path": "a", "edits": [{"oldText": "x", "newText": "y", "newtext": "z"}]}`, `unknown argument "edits[0].newtext" (did you mean "newText"?)`},
		{"enum", editSchema, `{"path": "a", "mode": "prepend"}`, `argument "mode": expected one of "replace", "append", got "prepend"`},
		{"type list", editSchema, `{"path": "a", "dryRun": "yes"}`, `argument "dryRun": expected boolean or null, got string`},
		{"minimum", editSchema, `{"path": "a", "count": 0}`, `argument "count": must be at least 1, got 0`},
		{"maximum", editSchema, `{"path": "a", "count": 11}`, `argument "count": must be at most 10, got 11`},
		{"minLength", editSchema, `{"path": "a", "name": "a"}`, `argument "name": must be at least 2 characters long, got 1`},
		{"pattern", editSchema, `{"path": "a", "name": "AB"}`, `argument "name": must match the pattern "^[a-z]+$", got "AB"`},
		{"maxItems", editSchema, `{"path": "a", "tags": [1, 2, 3]}`, `argument "tags": must have at most 2 items, got 3`},
		{"open object", editSchema, `{"path": "a", "extra": {"deep": [1]}}`, ""},

		{"no properties", `{"type": "object"}`, `{"anything": [1, {"x": null}]}`, ""},
		{"no properties closed", `{"type": "object", "additionalProperties": false}`, `{"x": 1}`, `unknown argument "x" (this takes no arguments)`},
		{"additionalProperties schema", `{"type": "object", "additionalProperties": {"type": "string"}}`, `{"x": 1}`, `argument "x": expected string, got number`},
		{"anyOf types", `{"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}`, `{"v": true}`,
			`argument "v": expected string or integer, got boolean`},
		{"oneOf is told by the library", `{"type": "object", "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}}`, `{"v": 3}`,
			`argument "v": matches more than one of the forms allowed (oneOf)`},
		{"oneOf none", `{"type": "object", "properties": {"v": {"oneOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]}}}`, `{"v": 3}`,
			`argument "v": matches none of the forms allowed (oneOf)`},
		{"not", `{"type": "object", "properties": {"v": {"not": {"type": "string"}}}}`, `{"v": "s"}`,
			`argument "v": has a form the tool forbids (not)`},
		{"multipleOf", `{"type": "object", "properties": {"v": {"type": "number", "multipleOf": 0.5}}}`, `{"v": 1.25}`,
			`argument "v": must be a multiple of 0.5, got 1.25`},
		{"other keywords in the library's words", `{"type": "object", "properties": {"v": {"type": "array", "uniqueItems": true}}}`, `{"v": [1, 1]}`,
			`argument "v": uniqueItems: array items 1 and 0 are equal`},
		{"anyOf valid", `{"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}`, `{"v": 3}`, ""},
		{"ref", `{"type": "object", "$defs": {"p": {"type": "string"}}, "properties": {"v": {"$ref": "#/$defs/p"}}}`, `{"v": 3}`,
			`argument "v": expected string, got number`},
		{"ref into items", `{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"$ref": "#/properties/a/items"}}}`, `{"b": "x"}`,
			`argument "b": expected integer, got string`},
		{"draft-07 ref hides its siblings", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"p": {"type": "string"}}, "properties": {"v": {"$ref": "#/definitions/p", "type": "integer"}}}`, `{"v": 3}`,
			`argument "v": expected string, got number`},
		{"draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`, `{}`,
			`missing required argument "a" (string)`},
		{"draft-04 is read as 2020-12", `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"a": {"type": "string"}}}`, `{"a": 1}`,
			`argument "a": expected string, got number`},

		// Schemas that cannot be used: only the basic checks apply (an
		// object, required names, unknown names of a closed schema).
		{"remote ref", `{"$ref": "https://example.com/schema.json"}`, `{"a": 1}`, ""},
		{"unknown type name", `{"type": "object", "properties": {"f": {"type": "file"}}}`, `{"f": 1}`, ""},
		{"unknown format", `{"type": "object", "properties": {"f": {"type": "string", "format": "file-path"}}}`, `{"f": "x"}`, ""},
		{"draft-03 required", `{"type": "object", "properties": {"a": {"type": "string", "required": true}}}`, `{"a": 1}`, ""},
		{"unusable schema still wants an object", `{"$ref": "https://example.com/schema.json"}`, `[1]`, `arguments must be a JSON object such as {"name": "value"}, got array`},
		{"unusable schema: required", `{"type": "object", "properties": {"f": {"type": "file", "description": "the upload"}}, "required": ["f"]}`, `{}`,
			`missing required argument "f" (file: the upload)`},
		{"unusable schema: unknown name", `{"type": "object", "$defs": {"a": {"$ref": "#/$defs/nowhere"}}, "properties": {"file": {"$ref": "#/$defs/a"}}, "additionalProperties": false}`, `{"fiel": "x"}`,
			`unknown argument "fiel" (did you mean "file"?)`},
		{"unusable schema: bad pattern, open", `{"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}}`, `{"q": 1, "p": 2}`, ""},
		{"unusable schema: draft-03 with a closed top level", `{"type": "object", "properties": {"a": {"type": "string", "required": true}}, "additionalProperties": false}`, `{"b": 1}`,
			`unknown argument "b" (did you mean "a"?)`},

		{"deep arguments", `{"type": "object"}`, `{"a": ` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`,
			`arguments nest deeper than 1000 levels; send flatter arguments`},
		{"deep but not too deep", `{"type": "object"}`, `{"a": ` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`, ""},
		{"deep strings do not count", `{"type": "object"}`, `{"a": "` + strings.Repeat(`[\"{`, 2000) + `"}`, ""},
		{"long values are cut", editSchema, `{"path": "a", "name": "` + strings.Repeat("A", 1000) + `"}`,
			`argument "name": must match the pattern "^[a-z]+$", got "` + strings.Repeat("A", 77) + `..."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(clientTool(t, tt.schema), json.RawMessage(tt.args))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want nil", tt.args, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%s) = nil, want %q", tt.args, tt.want)
			}
			if !errors.Is(err, api.ErrBadArgs) {
				t.Errorf("error %v does not wrap ErrBadArgs", err)
			}
			if got := strings.TrimPrefix(err.Error(), "invalid arguments: "); got != tt.want {
				t.Errorf("Validate(%s)\n got: %s\nwant: %s", tt.args, got, tt.want)
			}
		})
	}
}

// TestValidateSchemaForms: the schema may come as a map (client), a
// *jsonschema.Schema (Go server), raw JSON, or be missing.
func TestValidateSchemaForms(t *testing.T) {
	forms := map[string]any{
		"map":     clientTool(t, readFileSchema).InputSchema,
		"raw":     json.RawMessage(readFileSchema),
		"bytes":   []byte(readFileSchema),
		"*Schema": mustSchema(t, readFileSchema),
		"Schema":  *mustSchema(t, readFileSchema),
		"anonymous": struct {
			Type     string   `json:"type"`
			Required []string `json:"required"`
		}{"object", []string{"path"}},
	}
	for name, schema := range forms {
		tool := &mcp.Tool{Name: "read_file", InputSchema: schema}
		if err := Validate(tool, json.RawMessage(`{"path": "/a"}`)); err != nil {
			t.Errorf("%s: valid arguments rejected: %v", name, err)
		}
		err := Validate(tool, json.RawMessage(`{}`))
		if err == nil || !strings.Contains(err.Error(), `missing required argument "path"`) {
			t.Errorf("%s: missing path: got %v", name, err)
		}
	}
	for _, schema := range []any{nil, json.RawMessage(nil), json.RawMessage("null")} {
		tool := &mcp.Tool{Name: "t", InputSchema: schema}
		if err := Validate(tool, json.RawMessage(`{"x": 1}`)); err != nil {
			t.Errorf("schema %v: %v", schema, err)
		}
		if err := Validate(tool, json.RawMessage(`1`)); err == nil {
			t.Errorf("schema %v: a number was accepted as arguments", schema)
		}
	}
	if err := Validate(nil, nil); err != nil {
		t.Errorf("nil tool: %v", err)
	}
}

func mustSchema(t *testing.T, s string) *jsonschema.Schema {
	t.Helper()
	var sc jsonschema.Schema
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		t.Fatal(err)
	}
	return &sc
}

// TestSchemaUnresolved: a schema the library cannot use says why,
// once, when it is read; a usable one says nothing.
func TestSchemaUnresolved(t *testing.T) {
	for schema, want := range map[string]string{
		readFileSchema: "",
		`{"$ref": "https://example.com/schema.json"}`:               "resolving the input schema",
		`{"type": "object", "properties": {"f": {"type": "file"}}}`: `type "file"`,
		`{"$ref": "#"}`: "refers to itself",
		`{"properties": {"a": {"required": true}}}`:                   "reading the input schema",
		`{"type": "object", "properties": {"x": {"$ref": "#/nope"}}}`: "resolving the input schema",
	} {
		err := New(clientTool(t, schema)).Unresolved()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want nil", schema, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want it to say %q", schema, err, want)
		}
	}
	for _, schema := range []any{json.RawMessage(`true`), json.RawMessage(`[1]`)} {
		a := New(&mcp.Tool{Name: "t", InputSchema: schema})
		if a.Unresolved() == nil {
			t.Errorf("schema %s: no reason given", schema)
		}
		if err := a.Validate(json.RawMessage(`{"x": 1}`)); err != nil {
			t.Errorf("schema %s: %v", schema, err)
		}
	}
}

// TestValidateAgreesWithLibrary: what Validate accepts is what
// jsonschema-go accepts, for schemas it can use.
func TestValidateAgreesWithLibrary(t *testing.T) {
	schemas := []string{readFileSchema, editSchema,
		`{"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string", "enum": ["a\"b", "é", "x"]}}}`,
		`{"type": "object", "properties": {"n": {"type": "number", "minimum": 0.1, "maximum": 10}, "x": {"exclusiveMinimum": 0, "exclusiveMaximum": 1},
			"s": {"type": "string", "minLength": 2, "maxLength": 3}, "a": {"type": "array", "minItems": 1, "maxItems": 2}}}`,
	}
	args := []string{
		`{}`, `{"path": "a"}`, `{"path": "a", "path": 1}`, `{"path": 1, "path": "a"}`, `{"n": 1}`, `{"n": 1.0}`, `{"n": 1e3}`,
		`{"s": "a\"b"}`, `{"s": "\u00e9"}`, `{"s": "y"}`, `{"n": 0.1}`, `{"n": 0.10000000000000000001}`, `{"n": 10.0000000000000000001}`,
		`{"x": 0}`, `{"x": 0.5}`, `{"x": 1e-400}`, `{"s": "日本"}`, "{\"s\": \"\xff\xfe\"}", `{"a": []}`, `{"a": [1, [2, 3]]}`,
		`{"path": "a", "edits": [{"oldText": "x"}]}`, `{"path": "a", "mode": "\u0061ppend"}`,
	}
	for _, sc := range schemas {
		tool := clientTool(t, sc)
		a := New(tool)
		if a.Unresolved() != nil {
			t.Fatalf("%s: %v", sc, a.Unresolved())
		}
		for _, arg := range args {
			var v any
			truth := json.Unmarshal([]byte(arg), &v) == nil && a.resolved.Validate(v) == nil
			if got := Validate(tool, json.RawMessage(arg)) == nil; got != truth {
				t.Errorf("schema %s\nValidate(%s) valid=%v, library valid=%v", sc, arg, got, truth)
			}
		}
	}
}

// TestSchemaConcurrent: one Schema serves every call of its tool at
// once (run with -race).
func TestSchemaConcurrent(t *testing.T) {
	a := New(clientTool(t, editSchema))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				args, ok := `{"path": "a", "mode": "append", "name": "ab"}`, true
				if i%2 == 1 {
					args, ok = `{"path": "a", "edits": [{"oldText": 1}], "name": "AB"}`, false
				}
				if err := a.Validate(json.RawMessage(args)); (err == nil) != ok {
					t.Errorf("Validate(%s) = %v", args, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestFlatSchemas: the schemas of the common flat shape are checked
// without the library, and what that accepts the library accepts; a
// schema that says more is never taken for flat.
func TestFlatSchemas(t *testing.T) {
	flat := []string{
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		`{"type":"object","properties":{"n":{"type":"integer","description":"how many"},"x":{"type":["number","null"]},"any":{}},"additionalProperties":false}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"mode":{"type":"string","enum":["a","b"],"default":"a"},"on":{"type":"boolean"}},"required":["mode","missing"]}`,
		`{"properties":{"o":{"type":"object"},"l":{"type":"array","title":"L"},"f":{"type":"string","format":"uri"}}}`,
		`{}`,
	}
	notFlat := []string{
		`{"type":"object","properties":{"s":{"type":"string","minLength":2}}}`,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}`,
		`{"type":"object","properties":{"n":{"enum":[1,2]}}}`,
		`{"type":"object","properties":{"x":true}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/X"}},"$defs":{"X":{"type":"string"}}}`,
		`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","minProperties":1}`,
		`{"type":["object","null"]}`,
	}
	args := []string{
		`{}`, `{"text":"hi"}`, `{"text":1}`, `{"text":null}`, `{"n":1}`, `{"n":1.5}`, `{"n":1e300}`, `{"n":"1"}`,
		`{"x":null}`, `{"x":2.5}`, `{"x":"2"}`, `{"any":[1,{"a":null}]}`, `{"other":1}`, `{"mode":"a","missing":1}`,
		`{"mode":"c","missing":1}`, `{"mode":1,"missing":1}`, `{"mode":"b","missing":0,"on":"yes"}`, `{"o":{},"l":[],"f":"not a uri"}`,
		`{"o":[],"l":{}}`, `{"s":"a"}`, `{"s":"ab"}`, `{"a":[1]}`, `{"a":["x"]}`, `{"text":"hi","text":2}`,
	}
	for i, sc := range append(flat, notFlat...) {
		tool := clientTool(t, sc)
		a := New(tool)
		if a.Unresolved() != nil {
			t.Fatalf("%s: %v", sc, a.Unresolved())
		}
		if want := i < len(flat); (a.flat != nil) != want {
			t.Errorf("schema %s: flat=%v, want %v", sc, a.flat != nil, want)
		}
		for _, arg := range args {
			var v any
			if err := json.Unmarshal([]byte(arg), &v); err != nil {
				t.Fatal(err)
			}
			truth := a.resolved.Validate(v) == nil
			if a.flat != nil && a.flat.accepts(v.(map[string]any)) && !truth {
				t.Errorf("schema %s: the flat check accepts %s, the library does not", sc, arg)
			}
			if got := a.Validate(json.RawMessage(arg)) == nil; got != truth {
				t.Errorf("schema %s\nValidate(%s) valid=%v, library valid=%v", sc, arg, got, truth)
			}
		}
	}
}
