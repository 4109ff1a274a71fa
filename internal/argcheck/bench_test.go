package argcheck

import (
	"encoding/json"
	"testing"
)

func BenchmarkValidateArguments(b *testing.B) {
	cases := []struct {
		name, schema, args string
	}{
		{"identity", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, `{"text":"hello"}`},
		{"nested", editSchema, `{"path": "a", "edits": [{"oldText": "x", "newText": "y"}], "mode": "append", "dryRun": null}`},
		{"bounds", editSchema, `{"path": "a", "count": 3, "tags": ["x"]}`},
		{"full_validation", editSchema, `{"path": "a", "name": "abc"}`}, // a pattern
		{"error", readFileSchema, `{"pth": "/tmp/a"}`},
	}
	// The schema is resolved once, as the session's tool cache keeps it.
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := New(clientTool(b, c.schema))
			args := json.RawMessage(c.args)
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Validate(args)
			}
		})
	}
}

// BenchmarkNew is what reading and resolving a tool's schema
// costs, once per tool per listing.
func BenchmarkNew(b *testing.B) {
	tool := clientTool(b, editSchema)
	b.ReportAllocs()
	for b.Loop() {
		New(tool)
	}
}

// BenchmarkValidateArgumentsParallel is the identity case from every core,
// as a session under load runs it.
func BenchmarkValidateArgumentsParallel(b *testing.B) {
	a := New(clientTool(b, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = a.Validate(args)
		}
	})
}
