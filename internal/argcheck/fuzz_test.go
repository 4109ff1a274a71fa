package argcheck

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
)

// FuzzValidateArguments (issue 21, item 5): any schema a server sends and
// any arguments a model writes are checked or refused with ErrBadArgs and a
// message of bounded size; nothing panics or hangs, and accepted
// arguments are a JSON object.
func FuzzValidateArguments(f *testing.F) {
	f.Add(editSchema, `{"path": "a", "edits": [{"oldText": "x", "newText": "y"}]}`)
	f.Add(`{"type":"object","$defs":{"A":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/A"}}}`, `{"x": "s"}`)
	f.Add(`{"$ref":"#"}`, `{}`)
	f.Add(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`, `{"n": 0}`)
	f.Add(`{"type":"object","additionalProperties":false}`, `{"x": [[[[1]]]]}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"file"},"b":{"$ref":"#/nowhere"}},"required":["a"],"additionalProperties":false}`, `{"c": 1}`)
	f.Add(`{"type":"object","properties":{"n":{"type":["integer","null"]},"m":{"type":"string","enum":["a","b"]}},"required":["m"],"additionalProperties":false}`, `{"n": 2.0, "m": "a"}`)
	f.Add(`{"type":"object","properties":{"v":{"oneOf":[{"type":"integer"},{"type":"number"}],"multipleOf":0.1}}}`, `{"v": 0.3}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		tool := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(schema)}
		if !json.Valid([]byte(schema)) {
			tool.InputSchema = nil
		}
		a := New(tool)
		err := a.Validate(json.RawMessage(args))
		// The flat check only ever accepts what the library accepts.
		var v any
		if a.flat != nil && json.Unmarshal([]byte(args), &v) == nil {
			if obj, ok := v.(map[string]any); ok && a.flat.accepts(obj) && a.resolved.Validate(v) != nil {
				t.Fatalf("schema %q: the flat check accepts %q, the library does not", schema, args)
			}
		}
		if err != nil {
			if !errors.Is(err, api.ErrBadArgs) {
				t.Fatalf("schema %q, args %q: %v does not wrap ErrBadArgs", schema, args, err)
			}
			if n := len(err.Error()); n > maxMessage {
				t.Fatalf("schema %q, args %q: a %d-byte message: %.200s...", schema, args, n, err)
			}
			return
		}
		if strings.TrimSpace(args) == "" {
			return
		}
		var obj map[string]any
		if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
			t.Fatalf("schema %q accepted %q, which is not a JSON object", schema, args)
		}
	})
}

// maxMessage bounds an error's text: five problems of at most
// maxProblemLen bytes, their separators and the count of the others.
const maxMessage = len("invalid arguments: ") + maxProblems*(maxProblemLen+2) + len("and 99999999999 more")

// FuzzValidateDeep: arguments nested to a depth the fuzzer picks, against
// a schema that refers to itself at every level.
func FuzzValidateDeep(f *testing.F) {
	f.Add(uint32(10_000), false)
	f.Add(uint32(150_000), true)
	f.Add(uint32(64), false)
	f.Add(uint32(998), true) // 1000 levels with the arguments' own object: the most allowed
	tool := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"properties":{"x":{"$ref":"#/$defs/n"},"o":{"type":"object","additionalProperties":{"$ref":"#/properties/o"}}}}`)}
	f.Fuzz(func(t *testing.T, depth uint32, objects bool) {
		// 100,000-deep arguments are validate_test.go's; here each input
		// stays small enough that an exec is fast (multi-megabyte inputs per
		// exec ended a 20 s run "context deadline exceeded" in CI's fuzz step).
		d := int(depth % 200_000)
		key, open, close := "x", "[", "]"
		if objects {
			key, open, close = "o", `{"k":`, "}"
		}
		inner := "[]"
		if objects {
			inner = "{}"
		}
		args := `{"` + key + `": ` + strings.Repeat(open, d) + inner + strings.Repeat(close, d) + "}"
		err := Validate(tool, json.RawMessage(args))
		switch {
		case d+2 > 1000:
			if err == nil || !strings.Contains(err.Error(), "arguments nest deeper than 1000 levels") {
				t.Fatalf("arguments nesting %d deep: %v; want them refused as too deep", d+2, err)
			}
		case err != nil:
			t.Fatalf("arguments nesting %d deep: %v", d+2, err)
		}
		if err != nil && !errors.Is(err, api.ErrBadArgs) {
			t.Fatalf("%v does not wrap ErrBadArgs", err)
		}
	})
}

// Issue 21: a tool schema whose anyOf refers back to itself made the
// schema library recurse until the stack overflowed, killing the daemon
// on the first call of that tool. Such a schema is not used (only the
// object shape is checked); a recursive schema that descends into the
// value still validates.
func TestSelfReferringSchemaIsNotFollowed(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","$defs":{"A":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/A"}}}`,
		`{"$ref":"#"}`,
		`{"allOf":[{"$ref":"#/allOf/0"}]}`,
		`{"type":"object","properties":{"x":{"not":{"$ref":"#/properties/x"}}}}`,
		`{"type":"object","$defs":{"A":{"$ref":"#/$defs/B"},"B":{"oneOf":[{"$ref":"#/$defs/A"}]}},"properties":{"x":{"$ref":"#/$defs/A"}}}`,
	} {
		tool := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(schema)}
		if err := Validate(tool, json.RawMessage(`{"x": "s"}`)); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
		if err := Validate(tool, json.RawMessage(`[1]`)); !errors.Is(err, api.ErrBadArgs) {
			t.Errorf("%s: an array was not refused: %v", schema, err)
		}
	}
	tree := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`)}
	if err := Validate(tree, json.RawMessage(`{"root": {"kids": [{"kids": []}]}}`)); err != nil {
		t.Errorf("a recursive tree schema: %v", err)
	}
	if err := Validate(tree, json.RawMessage(`{"root": {"kids": [{"kids": 3}]}}`)); !errors.Is(err, api.ErrBadArgs) {
		t.Errorf("a recursive tree schema accepted a wrong value: %v", err)
	}
}
