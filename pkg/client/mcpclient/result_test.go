package mcpclient

import (
	"encoding/json"
	"reflect"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDecodeResultMatchesSDK: whatever path decodes a result, the caller
// gets what the SDK's own decoding gives.
func TestDecodeResultMatchesSDK(t *testing.T) {
	cases := []struct{ name, json string }{
		{"text", `{"content":[{"type":"text","text":"hello"}]}`},
		{"two texts", `{"content":[{"type":"text","text":"a"},{"type":"text","text":""}]}`},
		{"tool error", `{"content":[{"type":"text","text":"no such file"}],"isError":true}`},
		{"meta and annotations", `{"_meta":{"k":1.5},"content":[{"type":"text","text":"x","_meta":{"a":"b"},"annotations":{"audience":["user"],"priority":0.5}}]}`},
		{"structured", `{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1,"list":[true,null,"s"]}}`},
		{"empty content", `{"content":[]}`},
		{"null content", `{"content":null}`},
		{"image", `{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}`},
		{"resource link", `{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`},
		{"embedded resource", `{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"hi"}}]}`},
		{"unknown field", `{"content":[{"type":"text","text":"a"}],"requestState":"s"}`},
		{"input required", `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want mcp.CallToolResult
			wantErr := json.Unmarshal([]byte(tc.json), &want)
			got, err := Result([]byte(tc.json))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, the SDK's %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(*got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(&want)
				t.Errorf("decoded\n%s\nthe SDK decodes\n%s", g, w)
			}
		})
	}
}

// TestDecodeResultComplete: resultType "complete" (the 2026 protocol) is
// the plain result the SDK's server marks again when it sends it.
func TestDecodeResultComplete(t *testing.T) {
	got, err := Result([]byte(`{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.NeedsInput() || len(got.Content) != 1 || got.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("got %+v", got)
	}
	if _, err := Result([]byte(`{"content":[{"type":"text"`)); err == nil {
		t.Error("a cut result decoded without error")
	}
}

// TestDecodeResultSmallGarbage: a text result no longer costs the SDK
// decoder's 32 KB buffer.
func TestDecodeResultSmallGarbage(t *testing.T) {
	data := []byte(`{"content":[{"type":"text","text":"hello"}]}`)
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := Result(data); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Errorf("decoding a text result allocates %d bytes; want under 8 KB", per)
	}
}

func BenchmarkDecodeResult(b *testing.B) {
	data := []byte(`{"content":[{"type":"text","text":"hello"}]}`)
	b.Run("nerve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Result(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var res mcp.CallToolResult
			if err := json.Unmarshal(data, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
