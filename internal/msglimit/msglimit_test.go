package msglimit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// refusal is a test's answer for a refused message: what it knew of it.
func refusal(o *Refused) []byte {
	return fmt.Appendf(nil, `{"refused":{"id":%q,"method":%v,"big":%v,"depth":%d}}`, o.ID, o.HasMethod, o.TooBig, o.Depth)
}

// TestReader feeds a Reader messages, one byte at a time through a small
// buffer, and checks what it hands on, what it refuses and what it knew
// of each refused message.
func TestReader(t *testing.T) {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	big := `{"jsonrpc":"2.0","result":{"text":"` + strings.Repeat(`x\"`, 1000) + `"},"id":7}`
	upper := func(msg []byte) []byte {
		if bytes.Contains(msg, []byte("drop")) {
			return nil
		}
		return bytes.ToUpper(msg)
	}
	tests := []struct {
		name  string
		sse   bool
		check func([]byte) []byte
		in    string
		want  string
	}{
		{"passes messages and garbage", false, nil, "{\"id\":1}\nnot json\n\n{\"a\":[1,{}]}", "{\"id\":1}\nnot json\n\n{\"a\":[1,{}]}"},
		{"too big, id last", false, nil, big + "\n{\"id\":2}\n", `{"refused":{"id":"7","method":false,"big":true,"depth":2}}` + "\n{\"id\":2}\n"},
		{"too deep, string id", false, nil, `{"id":"a,}b","result":` + deep + "}\n", `{"refused":{"id":"\"a,}b\"","method":false,"big":false,"depth":1002}}` + "\n"},
		{"too deep request", false, nil, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":` + deep + "}\n", `{"refused":{"id":"3","method":true,"big":false,"depth":1002}}` + "\n"},
		{"nested id is not the id", false, nil, `{"result":{"id":5,"x":` + deep + `}}` + "\n", `{"refused":{"id":"","method":false,"big":false,"depth":1003}}` + "\n"},
		{"sse", true, nil, "event: message\ndata: " + big + "\n\nevent: message\ndata: {\"id\":2}\n\n", "event: message\ndata: {\"refused\":{\"id\":\"7\",\"method\":false,\"big\":true,\"depth\":2}}\n\nevent: message\ndata: {\"id\":2}\n\n"},
		{"check", false, upper, "{\"a\":1}\n\n{\"drop\":1}\n{\"b\":2}", "{\"A\":1}\n\n{\"B\":2}"},
		{"check, sse", true, upper, "event: message\ndata: {\"a\":1}\n\ndata: {\"drop\":1}\n", "event: message\ndata: {\"A\":1}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewReader(iotest.OneByteReader(strings.NewReader(tt.in)), &Options{Limit: 3000, SSE: tt.sse, Refused: refusal, Check: tt.check})
			g.rbuf = make([]byte, 16)
			out, err := io.ReadAll(g)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("handed on\n%q\nwant\n%q", out, tt.want)
			}
		})
	}
}

// TestReaderOnEvent: a Reader of an event stream gives OnEvent the
// data of each complete event of type "message" that may be a request or
// notification, as the SSE framing defines it, before the line that ends
// the event is handed on, and leaves the bytes unchanged.
func TestReaderOnEvent(t *testing.T) {
	const note = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}`
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one line", "id: 1\ndata: " + note + "\n\n", []string{note}},
		{"no space after the colon, CRLF", "data:" + note + "\r\n\r\n", []string{note}},
		{"type message", "event: message\ndata: " + note + "\n\n", []string{note}},
		{"another type", "event: endpoint\ndata: " + note + "\n\n", nil},
		{"lines joined", "data: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"x\"}\n\n", []string{"{\"jsonrpc\":\"2.0\",\n\"method\":\"x\"}"}},
		{"a result is not kept", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", nil},
		{"priming event, comment, retry", ": ok\nid: 5\nretry: 10\ndata:\n\n", nil},
		{"unfinished at the end", "data: " + note + "\n", nil},
		{"two events", "data: " + note + "\n\nevent: close\nretry: 10\n\ndata: " + note + "\n\n", []string{note, note}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var g *Reader
			g = NewReader(iotest.OneByteReader(strings.NewReader(tt.in)), &Options{Limit: 3000, SSE: true, Refused: func(*Refused) []byte { return nil }, OnEvent: func(data []byte) {
				// The empty line that ends the event is not handed on yet.
				if out := string(g.out); strings.HasSuffix(strings.ReplaceAll(out, "\r", ""), "\n\n") {
					t.Errorf("event handed on before onEvent saw it: %q", out)
				}
				got = append(got, string(data))
			}})
			g.rbuf = make([]byte, 16)
			out, err := io.ReadAll(g)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.in {
				t.Errorf("handed on %q, want it unchanged", out)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("onEvent got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzReader: a Reader hands on unchanged every stream whose messages are
// within the limits, whatever the bytes and however the reads fall, and
// never panics on any other.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
		"{\"id\":\"a\\\"b\",\"method\":\"x\",\"params\":[1,[2,{}]]}\n\n",
		"not json\n\x00\x01{\"half\": \n",
		"data: {\"id\":2}\n\nevent: x\n",
		strings.Repeat("[", 1200) + "\n",
		`{"result":"` + strings.Repeat("x", 300) + `","id":9}` + "\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, sse bool) {
		refusals := 0
		// Following events never changes what is handed on.
		g := NewReader(iotest.HalfReader(bytes.NewReader(in)), &Options{Limit: 256, SSE: sse, OnEvent: func([]byte) {}, Refused: func(o *Refused) []byte {
			refusals++
			if o.ID != nil && !json.Valid(o.ID) {
				t.Errorf("the id is not JSON: %s", o.ID)
			}
			return refusal(o)
		}})
		g.rbuf = make([]byte, 7)
		out, err := io.ReadAll(g)
		if err != nil {
			t.Fatal(err)
		}
		if refusals == 0 && !bytes.Equal(out, in) {
			t.Errorf("nothing refused, but handed on %q for %q", out, in)
		}
	})
}
