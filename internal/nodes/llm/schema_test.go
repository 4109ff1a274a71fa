package llm_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/nerve-dev/nerve/internal/nodes/llm"
)

func TestCleanSchema(t *testing.T) {
	tests := []struct {
		name     string
		in, want string
	}{
		{
			name: "draft keywords dropped, exclusive bounds kept as words",
			in: `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object",
				"properties":{"n":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10,"description":"a count"},
				"m":{"type":"integer","minimum":1,"exclusiveMinimum":true}},"required":["n"]}`,
			want: `{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":10,"description":"a count (must be > 0, must be < 10)"},
				"m":{"type":"integer","minimum":1,"description":"(must be > 1)"}},"required":["n"]}`,
		},
		{
			name: "nested: items, anyOf, $defs, const, booleans",
			in: `{"type":"object","properties":{"list":{"type":"array","items":{"$comment":"c","const":"a"}},
				"u":{"anyOf":[{"type":"string","examples":["x"]},true]}},"$defs":{"d":{"readOnly":true,"type":"string"}}}`,
			want: `{"type":"object","properties":{"list":{"type":"array","items":{"enum":["a"]}},
				"u":{"anyOf":[{"type":"string"},{}]}},"$defs":{"d":{"type":"string"}}}`,
		},
		{
			name: "a property named like a keyword is a property",
			in:   `{"type":"object","properties":{"$schema":{"type":"string"},"const":{"type":"string"}}}`,
			want: `{"type":"object","properties":{"$schema":{"type":"string"},"const":{"type":"string"}}}`,
		},
		{
			name: "top-level oneOf/anyOf/allOf flattened (Anthropic refuses them there)",
			in: `{"type":"object","properties":{"mode":{"type":"string"}},"required":["mode"],
				"oneOf":[{"properties":{"path":{"type":"string"}},"required":["path"]},{"properties":{"url":{"type":"string","$comment":"c"},"method":{"type":"string"}},"required":["url","method"]}],
				"allOf":[{"properties":{"verbose":{"type":"boolean"}},"required":["verbose"]}],
				"anyOf":[{"required":["mode"]}]}`,
			want: `{"type":"object","properties":{"mode":{"type":"string"},"path":{"type":"string"},"url":{"type":"string"},"method":{"type":"string"},"verbose":{"type":"boolean"}},
				"required":["mode","verbose"],"description":"(give exactly one of: {path} or {url, method})"}`,
		},
		{
			name: "a union inside a property stays",
			in:   `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]}}}`,
			want: `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]}}}`,
		},
		{name: "no schema", in: `null`, want: `{"type":"object","properties":{}}`},
		{name: "no properties", in: `{"type":"object"}`, want: `{"type":"object","properties":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in, want any
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(in)
			got := llm.CleanSchema(in)
			gotJSON, _ := json.Marshal(got)
			var gotAny any
			_ = json.Unmarshal(gotJSON, &gotAny)
			if !reflect.DeepEqual(gotAny, want) {
				t.Errorf("got  %s\nwant %s", gotJSON, tt.want)
			}
			if after, _ := json.Marshal(in); string(after) != string(before) {
				t.Errorf("the tool's own schema was modified:\n%s\n%s", before, after)
			}
		})
	}
}

func TestCleanSchemaOfSDKTypes(t *testing.T) {
	// Go-SDK servers give *jsonschema.Schema values.
	s := &jsonschema.Schema{Schema: "https://json-schema.org/draft/2020-12/schema", Type: "object",
		Properties: map[string]*jsonschema.Schema{"x": {Type: "string"}}}
	got, _ := json.Marshal(llm.CleanSchema(s))
	if string(got) != `{"properties":{"x":{"type":"string"}},"type":"object"}` {
		t.Errorf("got %s", got)
	}
	raw := json.RawMessage(`{"type":"object","$schema":"x"}`)
	got, _ = json.Marshal(llm.CleanSchema(raw))
	if string(got) != `{"properties":{},"type":"object"}` {
		t.Errorf("got %s", got)
	}
}
