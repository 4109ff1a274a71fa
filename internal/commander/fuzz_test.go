package commander

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Commander's fuzz targets (issue 21, item 5): any line parses or
// fails with a message, never a panic; a call's arguments are valid JSON;
// the *Deep target nests values to a depth the fuzzer picks. Crashers are
// kept under testdata/fuzz; .ci/run runs each target for a bounded time.

// fuzzCatalog is testCatalog plus a tool whose schema refers to itself.
func fuzzCatalog() *Index {
	cat := testCatalog()
	nodes := map[string][]*mcp.Tool{}
	for _, id := range cat.Nodes() {
		tools, _ := cat.Tools(id)
		nodes[id] = tools
	}
	nodes["self"] = []*mcp.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object","$defs":{"A":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"array","items":{"$ref":"#/$defs/A"}}]}},"properties":{"r":{"$ref":"#/$defs/A"},"x":{},"s":{"type":"string"}},"required":["s"]}`)}}
	return NewIndex(nodes)
}

type fuzzRefs struct{}

func (fuzzRefs) Block(n int) (string, bool) { return `{"a": [1, "two"]}`, n == 1 }
func (fuzzRefs) NodeBlock(node string, back int) (string, bool) {
	return "text with \"quotes\" and ${x}", back == 1
}

// FuzzParseLine: every line the REPL may be given.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"@fs read_file path=/a", `@fs read_file {"path": "/a", "tail": 3}`, "@bash ls -la", "@fs ?", ":help", "@self t s=x r=[[1]] x=1", `@fs write_file path=/a content=$1`, "@echo identity text=@fs^1", "@", "", `@fs read_file {"path": "` + strings.Repeat("[", 100)} {
		f.Add(s)
	}
	cat := fuzzCatalog()
	f.Fuzz(func(t *testing.T, line string) {
		ln, err := Parse(line, cat, fuzzRefs{})
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: an empty message", line)
			}
			return
		}
		if ln.Kind == Call && len(ln.Args) > 0 && !json.Valid(ln.Args) {
			t.Fatalf("%q: arguments %q are not JSON", line, ln.Args)
		}
		_, _ = SplitArgv(line)
		_ = Incomplete(line)
	})
}

// FuzzLineDeep: arguments nested to any depth, as JSON and as key=value.
// Past encoding/json's limit the message names it; within it, the value
// arrives as written.
func FuzzLineDeep(f *testing.F) {
	f.Add(uint32(150_000), false, true)
	f.Add(uint32(9_999), true, false)
	f.Add(uint32(3), false, false)
	cat := fuzzCatalog()
	f.Fuzz(func(t *testing.T, depth uint32, objects, asJSON bool) {
		// Each input stays small enough that an exec is fast: multi-megabyte
		// inputs per exec ended fuzz runs "context deadline exceeded" in CI.
		d := int(depth%200_000) + 1
		open, close := "[", "]"
		if objects {
			open, close = `{"k":`, "}"
		}
		value := strings.Repeat(open, d) + "1" + strings.Repeat(close, d)
		line := "@self t s=x x=" + value
		if asJSON {
			line = `@self t {"s": "x", "x": ` + value + "}"
		}
		ln, err := Parse(line, cat, nil)
		// The value sits inside the arguments' object: one level more.
		if d+1 > maxJSONDepth {
			if err == nil || !strings.Contains(err.Error(), "more than 10000 deep (the limit)") {
				t.Fatalf("nesting %d deep: %v; want the limit named", d, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("nesting %d deep: %v", d, err)
		}
		var got struct{ X json.RawMessage }
		if err := json.Unmarshal(ln.Args, &got); err != nil || string(got.X) != value {
			t.Fatalf("nesting %d deep: x arrived as %.40q (%v)", d, got.X, err)
		}
	})
}
