package commander

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParse(t *testing.T) {
	cat := testCatalog()
	tests := []struct {
		name  string
		input string
		kind  Kind
		node  string
		tool  string
		args  string // exact JSON
		form  Form
		argv  []string
		err   string // substring of the error; "" means no error
	}{
		// blank and top level
		{name: "empty", input: "", kind: Empty},
		{name: "spaces only", input: "   \t  ", kind: Empty},
		{name: "lone question mark is :help", input: "?", kind: Command, argv: []string{"help"}},
		{name: "@ alone", input: "@", err: "type @NODE ? to list a node's tools (nodes: bash, echo, fs, fs-cache, graph, pending)"},
		{name: "@ with space before node", input: "@ fs ?", err: "no space after @: type @fs ?"},
		{name: "no @ but a node name", input: "fs read_file path=/a", err: "start a call with @: @fs read_file path=/a"},
		{name: "neither @ nor :", input: "hello there", err: "a line is @NODE TOOL ... to call a tool or :COMMAND"},

		// node and tool help
		{name: "node help", input: "@fs ?", kind: NodeHelp, node: "fs"},
		{name: "node alone is node help", input: "@fs", kind: NodeHelp, node: "fs"},
		{name: "question mark glued to node", input: "@fs?", kind: NodeHelp, node: "fs"},
		{name: "leading and trailing whitespace", input: "  \t@fs ?  \n", kind: NodeHelp, node: "fs"},
		{name: "tool help", input: "@fs read_file ?", kind: ToolHelp, node: "fs", tool: "read_file"},
		{name: "tool help glued", input: "@fs read_file?", kind: ToolHelp, node: "fs", tool: "read_file"},
		{name: "qualified tool help", input: "@fs.read_file ?", kind: ToolHelp, node: "fs", tool: "read_file"},
		{name: "single-tool node help", input: "@bash ?", kind: ToolHelp, node: "bash", tool: "bash"},
		{name: "single-tool node alone is its help", input: "@bash", kind: ToolHelp, node: "bash", tool: "bash"},
		{name: "single-tool named tool help", input: "@bash bash ?", kind: ToolHelp, node: "bash", tool: "bash"},
		{name: "node without listed tools", input: "@pending ?", kind: NodeHelp, node: "pending"},

		// unknown and invalid names
		{name: "unknown node with suggestion", input: "@fss ?", err: "unknown node \"fss\" — did you mean @fs? (`:node ls` lists nodes)"},
		{name: "unknown node without suggestion", input: "@zzzzzz ?", err: "unknown node \"zzzzzz\" — nodes: bash, echo, fs, fs-cache, graph, pending; `:node add KIND zzzzzz` adds one"},
		{name: "upper-case node id", input: "@FS ?", err: `invalid node id "FS": ids are lower-case a-z, 0-9, '_' and '-' — did you mean @fs?`},
		{name: "unicode node id", input: "@fß ?", err: `invalid node id "fß": ids are lower-case a-z, 0-9, '_' and '-' — did you mean @fs?`},
		{name: "unicode node id far from any", input: "@日本語 ?", err: `invalid node id "日本語": ids are lower-case a-z, 0-9, '_' and '-'`},
		{name: "unknown tool with suggestion", input: "@fs red_file path=/a", err: "unknown tool \"red_file\" on @fs — did you mean read_file? `@fs ?` lists its tools"},
		{name: "unknown tool without suggestion", input: "@fs frobnicate", err: "unknown tool \"frobnicate\" on @fs — `@fs ?` lists its tools"},
		{name: "unknown qualified tool", input: "@fs.read_fil {}", err: `unknown tool "read_fil" on @fs — did you mean read_file?`},
		{name: "qualified without tool", input: "@fs. ?", err: "missing tool name after @fs. — type `@fs ?` to list its tools"},
		{name: "unknown node qualified", input: "@fss.read_file ?", err: `unknown node "fss" — did you mean @fs?`},

		// JSON
		{name: "json", input: `@fs read_file {"path": "/tmp/a"}`, kind: Call, node: "fs", tool: "read_file", args: `{"path":"/tmp/a"}`, form: FormJSON},
		{name: "json qualified", input: `@fs.read_file {"path":"/tmp/a","tail":3}`, kind: Call, node: "fs", tool: "read_file", args: `{"path":"/tmp/a","tail":3}`, form: FormJSON},
		{name: "qualified with a dotted MCP tool name", input: `@fs.files.read {"path":"/a"}`, kind: Call, node: "fs", tool: "files.read", args: `{"path":"/a"}`, form: FormJSON},
		{name: "dotted tool name as a word", input: `@fs files.read path=/a`, kind: Call, node: "fs", tool: "files.read", args: `{"path":"/a"}`, form: FormKeyValue},
		{name: "multi-line json", input: "@fs read_file {\n  \"path\": \"/tmp/a\",\n  \"head\": 2\n}", kind: Call, node: "fs", tool: "read_file", args: `{"path":"/tmp/a","head":2}`, form: FormJSON},
		{name: "json on the next line", input: "@fs read_file\n{\"path\": \"/x\"}", kind: Call, node: "fs", tool: "read_file", args: `{"path":"/x"}`, form: FormJSON},
		{name: "json with unicode", input: `@fs read_file {"path": "/tmp/日本"}`, kind: Call, node: "fs", tool: "read_file", args: `{"path":"/tmp/日本"}`, form: FormJSON},
		{name: "json syntax error position", input: "@fs read_file {\"path\": \"/a\",\n \"head\" 2}", err: "invalid JSON at line 2, column 9"},
		{name: "json unclosed", input: `@fs read_file {"path": "/a"`, err: "the JSON ends before it is complete"},
		{name: "json trailing garbage", input: `@fs read_file {"path": "/a"} x`, err: `invalid JSON at line 1, column 16 of the arguments: 'x' after top-level value — check the quotes, commas and colons near ": \"/a\"} x"`},
		{name: "json unknown key", input: `@fs read_file {"pth": "/a"}`, err: "unknown argument \"pth\" for @fs read_file — did you mean path? `@fs read_file ?` lists its parameters"},
		{name: "json wrong type", input: `@fs read_file {"path": 5}`, err: `"path" is an integer but should be string`},
		{name: "json missing required", input: `@fs read_file {"head": 1}`, err: "missing required argument \"path\" (string) — add path=PATH, or see `@fs read_file ?`"},
		{name: "json open schema accepts any key", input: `@fs ping {"x": 1}`, kind: Call, node: "fs", tool: "ping", args: `{"x":1}`, form: FormJSON},
		{name: "single-tool with tool name and json", input: `@bash bash {"command":"ls"}`, kind: Call, node: "bash", tool: "bash", args: `{"command":"ls"}`, form: FormJSON},
		{name: "single-tool without raw param takes json directly", input: `@graph {"inputs": {"a": 1}}`, kind: Call, node: "graph", tool: "run", args: `{"inputs":{"a":1}}`, form: FormJSON},

		// key=value and coercion
		{name: "kv string", input: "@fs read_file path=/tmp/a.txt", kind: Call, node: "fs", tool: "read_file", args: `{"path":"/tmp/a.txt"}`, form: FormKeyValue},
		{name: "kv integer", input: "@fs read_file path=/a tail=10", kind: Call, node: "fs", tool: "read_file", args: `{"path":"/a","tail":10}`, form: FormKeyValue},
		{name: "kv negative integer", input: "@fs config count=-3", kind: Call, node: "fs", tool: "config", args: `{"count":-3}`, form: FormKeyValue},
		{name: "kv integer error", input: "@fs config count=abc", err: "count=abc: expected integer"},
		{name: "kv float is not integer", input: "@fs config count=1.5", err: "count=1.5: expected integer"},
		{name: "kv number", input: "@fs config ratio=0.25", kind: Call, node: "fs", tool: "config", args: `{"ratio":0.25}`, form: FormKeyValue},
		{name: "kv number exponent", input: "@fs config ratio=1e-3", kind: Call, node: "fs", tool: "config", args: `{"ratio":1e-3}`, form: FormKeyValue},
		{name: "kv number error", input: "@fs config ratio=0x10", err: "ratio=0x10: expected number"},
		{name: "kv boolean", input: "@fs config verbose=true", kind: Call, node: "fs", tool: "config", args: `{"verbose":true}`, form: FormKeyValue},
		{name: "kv boolean error", input: "@fs config verbose=yes", err: "verbose=yes: expected true or false"},
		{name: "kv enum", input: "@fs config mode=slow", kind: Call, node: "fs", tool: "config", args: `{"mode":"slow"}`, form: FormKeyValue},
		{name: "kv enum error", input: "@fs config mode=fats", err: "mode=fats: expected one of fast, slow — did you mean fast?"},
		{name: "kv enum via $ref", input: "@fs config level=2", kind: Call, node: "fs", tool: "config", args: `{"level":2}`, form: FormKeyValue},
		{name: "kv enum via $ref error", input: "@fs config level=7", err: "level=7: expected one of 1, 2, 3"},
		{name: "kv array json", input: "@fs config ids=[1, 2, 3]", kind: Call, node: "fs", tool: "config", args: `{"ids":[1,2,3]}`, form: FormKeyValue},
		{name: "kv array commas", input: "@fs config tags=a,b,c", kind: Call, node: "fs", tool: "config", args: `{"tags":["a","b","c"]}`, form: FormKeyValue},
		{name: "kv array integer items", input: "@fs config ids=4,5", kind: Call, node: "fs", tool: "config", args: `{"ids":[4,5]}`, form: FormKeyValue},
		{name: "kv array item error", input: "@fs config ids=4,x", err: "ids=4,x: expected an array like ids=[1,2] or ids=a,b"},
		{name: "kv array repeated key adds items", input: "@fs config tags=a tags=b,c", kind: Call, node: "fs", tool: "config", args: `{"tags":["a","b","c"]}`, form: FormKeyValue},
		{name: "kv object", input: `@fs config opts={"follow": true, "depth": 2}`, kind: Call, node: "fs", tool: "config", args: `{"opts":{"follow":true,"depth":2}}`, form: FormKeyValue},
		{name: "kv object error", input: "@fs config opts=deep", err: `opts=deep: expected a JSON object like opts={"k":1}`},
		{name: "kv object unclosed", input: `@fs config opts={"follow": true`, err: "opts={\"follow\": true: the { is never closed"},
		{name: "kv object bad json", input: `@fs config opts={follow: true}`, err: "opts={follow: true}: invalid JSON at line 1, column 2"},
		{name: "kv nullable null", input: "@fs config note=null", kind: Call, node: "fs", tool: "config", args: `{"note":null}`, form: FormKeyValue},
		{name: "kv nullable string", input: "@fs config note=hi", kind: Call, node: "fs", tool: "config", args: `{"note":"hi"}`, form: FormKeyValue},
		{name: "kv untyped guesses", input: "@fs config anything=12", kind: Call, node: "fs", tool: "config", args: `{"anything":12}`, form: FormKeyValue},
		{name: "kv untyped quoted stays string", input: `@fs config anything="12"`, kind: Call, node: "fs", tool: "config", args: `{"anything":"12"}`, form: FormKeyValue},
		{name: "kv double quotes with spaces", input: `@fs write_file path="/tmp/a b" content="say \"hi\""`, kind: Call, node: "fs", tool: "write_file", args: `{"path":"/tmp/a b","content":"say \"hi\""}`, form: FormKeyValue},
		{name: "kv single quotes", input: `@fs write_file path='/tmp/a b' content='x=1 "y"'`, kind: Call, node: "fs", tool: "write_file", args: `{"path":"/tmp/a b","content":"x=1 \"y\""}`, form: FormKeyValue},
		{name: "kv empty value", input: "@fs write_file path=/a content=", kind: Call, node: "fs", tool: "write_file", args: `{"path":"/a","content":""}`, form: FormKeyValue},
		{name: "kv unclosed quote", input: `@fs write_file path="/a content=x`, err: `path=: unclosed " quote — close it`},
		{name: "kv unknown key", input: "@fs read_file pth=/a", err: `unknown argument "pth" for @fs read_file — did you mean path?`},
		{name: "kv given twice", input: "@fs read_file path=/a path=/b", err: "path is given twice — give each key once"},
		{name: "kv missing required", input: "@fs write_file path=/a", err: `missing required argument "content" (string) — add content=CONTENT`},
		{name: "kv then a bare word", input: "@fs read_file path=/a oops", err: `"oops" is not key=value`},
		{name: "kv on single-tool after its name", input: "@bash bash command=ls timeout=5", kind: Call, node: "bash", tool: "bash", args: `{"command":"ls","timeout":5}`, form: FormKeyValue},
		{name: "kv on single-tool without raw param", input: `@graph inputs={"x":1}`, kind: Call, node: "graph", tool: "run", args: `{"inputs":{"x":1}}`, form: FormKeyValue},
		{name: "kv on a node whose tools are unknown", input: "@pending go n=1 s=x", kind: Call, node: "pending", tool: "go", args: `{"n":1,"s":"x"}`, form: FormKeyValue},
		{name: "no arguments", input: "@fs ping", kind: Call, node: "fs", tool: "ping", args: `{}`, form: FormNone},
		{name: "no arguments but required", input: "@fs read_file", err: `missing required argument "path"`},

		// free text
		{name: "single-tool text", input: "@bash ls -la", kind: Call, node: "bash", tool: "bash", args: `{"command":"ls -la"}`, form: FormText},
		{name: "single-tool text ending in ?", input: "@bash echo ?", kind: Call, node: "bash", tool: "bash", args: `{"command":"echo ?"}`, form: FormText},
		{name: "single-tool text keeps quotes and braces", input: `@bash echo "a  b" | jq '{x: .}'`, kind: Call, node: "bash", tool: "bash", args: `{"command":"echo \"a  b\" | jq '{x: .}'"}`, form: FormText},
		{name: "single-tool text starting with the tool name", input: "@bash bash script.sh", kind: Call, node: "bash", tool: "bash", args: `{"command":"bash script.sh"}`, form: FormText},
		{name: "single-tool known keys are key=value", input: "@bash command=ls timeout=5", kind: Call, node: "bash", tool: "bash", args: `{"command":"ls","timeout":5}`, form: FormKeyValue},
		{name: "single-tool known key then text stays text", input: "@bash timeout=5 sleep 1", kind: Call, node: "bash", tool: "bash", args: `{"command":"timeout=5 sleep 1"}`, form: FormText},
		{name: "single-tool text looking like key=value", input: "@bash FOO=1 env", kind: Call, node: "bash", tool: "bash", args: `{"command":"FOO=1 env"}`, form: FormText},
		{name: "single-tool text starting with a brace", input: "@bash { ls; }", kind: Call, node: "bash", tool: "bash", args: `{"command":"{ ls; }"}`, form: FormText},
		{name: "single-tool multi-line text", input: "@bash f() {\n  echo hi\n}", kind: Call, node: "bash", tool: "bash", args: `{"command":"f() {\n  echo hi\n}"}`, form: FormText},
		{name: "single-tool optional only string param", input: "@echo hello world", kind: Call, node: "echo", tool: "identity", args: `{"text":"hello world"}`, form: FormText},
		{name: "qualified single-tool text", input: "@bash.bash uname -a", kind: Call, node: "bash", tool: "bash", args: `{"command":"uname -a"}`, form: FormText},
		{name: "value form of a multi-tool node", input: "@fs search hello world", kind: Call, node: "fs", tool: "search", args: `{"query":"hello world"}`, form: FormText},
		{name: "value form unquotes one quoted word", input: `@fs search "hello world"`, kind: Call, node: "fs", tool: "search", args: `{"query":"hello world"}`, form: FormText},
		{name: "key=value words with an unknown key are refused, not text", input: "@fs search q=1", err: `unknown argument "q" for @fs search`},
		{name: "quoted key=value is text", input: `@fs search "q=1"`, kind: Call, node: "fs", tool: "search", args: `{"query":"q=1"}`, form: FormText},
		{name: "misspelt key on a single-tool node is refused", input: "@echo txet=hi", err: `unknown argument "txet" for @echo identity — did you mean text?`},
		{name: "unknown key on a single-tool node is refused", input: "@echo a=3", err: `unknown argument "a" for @echo identity`},
		{name: "named parameter holds key=value text", input: "@echo text=a=3", kind: Call, node: "echo", tool: "identity", args: `{"text":"a=3"}`, form: FormKeyValue},
		{name: "json on a single-tool node with a text parameter", input: `@bash {"command": "echo hi"}`, kind: Call, node: "bash", tool: "bash", args: `{"command":"echo hi"}`, form: FormJSON},
		{name: "json with a misspelt key on a single-tool node", input: `@bash {"comand": "echo hi"}`, err: `unknown argument "comand" for @bash bash — did you mean command?`},
		{name: "single-tool node's tool name alone is the call without arguments", input: "@echo identity", kind: Call, node: "echo", tool: "identity", args: `{}`, form: FormNone},
		{name: "single-tool tool name alone checks required", input: "@bash bash", err: `missing required argument "command"`},
		// Issue 27: after a single-tool node's tool name, a misspelt key is
		// refused as after any tool's name, never run as text.
		{name: "misspelt key after a single-tool node's tool name is refused", input: "@echo identity tex=hi", err: `unknown argument "tex" for @echo identity — did you mean text?`},
		{name: "misspelt key after bash's tool name is refused", input: "@bash bash comand=pwd", err: `unknown argument "comand" for @bash bash — did you mean command?`},
		{name: "near-miss key then text after the tool name is refused", input: "@bash bash comand=pwd ls", err: `did you mean command?`},
		{name: "unknown key of key=value words after the tool name is refused", input: "@echo identity a=3", err: `unknown argument "a" for @echo identity`},
		{name: "far key then text after the tool name is text", input: "@bash bash FOO=1 ./run.sh", kind: Call, node: "bash", tool: "bash", args: `{"command":"bash FOO=1 ./run.sh"}`, form: FormText},
		{name: "qualified single-tool misspelt key is refused", input: "@echo.identity tex=hi", err: `did you mean text?`},
		{name: "near-miss key then text without the tool name is text", input: "@bash comand=pwd ls", kind: Call, node: "bash", tool: "bash", args: `{"command":"comand=pwd ls"}`, form: FormText},
		{name: "value form known key is key=value", input: "@fs search query=x limit=2", kind: Call, node: "fs", tool: "search", args: `{"query":"x","limit":2}`, form: FormKeyValue},
		{name: "free text without a text parameter", input: "@fs write_file hello", err: "@fs write_file takes key=value or {JSON} arguments, not free text — e.g. @fs write_file path=PATH content=CONTENT"},
		{name: "free text on single-tool without raw param", input: "@graph go now", err: "@graph run takes key=value or {JSON} arguments"},
		{name: "free text on unlisted tools", input: "@pending go now", err: "the tools of @pending are not listed yet"},
		{name: "hyphenated node id", input: "@fs-cache get key=a", kind: Call, node: "fs-cache", tool: "get", args: `{"key":"a"}`, form: FormKeyValue},

		// block references
		{name: "ref in text", input: "@bash echo :::1", kind: Call, node: "bash", tool: "bash", args: `{"command":"echo hello"}`, form: FormText},
		{name: "ref with quotes in text is escaped once", input: "@echo :::2", kind: Call, node: "echo", tool: "identity", args: `{"text":"line \"two\""}`, form: FormText},
		{name: "ref inside a json string", input: `@fs write_file {"path": "/a", "content": "x :::2 y"}`, kind: Call, node: "fs", tool: "write_file", args: `{"path":"/a","content":"x line \"two\" y"}`, form: FormJSON},
		{name: "ref as a whole json value", input: `@fs write_file {"path": "/a", "content": :::bash[-1]}`, kind: Call, node: "fs", tool: "write_file", args: `{"path":"/a","content":"line \"two\""}`, form: FormJSON},
		{name: "node ref one back", input: "@echo :::fs[-2]", kind: Call, node: "echo", tool: "identity", args: `{"text":"hello"}`, form: FormText},
		{name: "ref in kv value coerced", input: "@fs read_file path=/a tail=:::3", kind: Call, node: "fs", tool: "read_file", args: `{"path":"/a","tail":42}`, form: FormKeyValue},
		{name: "ref in kv string", input: "@fs read_file path=/tmp/:::1.txt", kind: Call, node: "fs", tool: "read_file", args: `{"path":"/tmp/hello.txt"}`, form: FormKeyValue},
		{name: "ref to a missing block", input: "@bash echo :::9", err: ":::9: no such block — blocks so far are 1 to 3"},
		{name: "ref to a missing node output", input: "@bash echo :::fs[-5]", err: ":::fs[-5]: @fs has no output 5 back — use :::fs[-1] for its last"},
		{name: "not a ref", input: "@bash echo a:::b", kind: Call, node: "bash", tool: "bash", args: `{"command":"echo a:::b"}`, form: FormText},

		// :commands
		{name: "command", input: ":node ls", kind: Command, argv: []string{"node", "ls"}},
		{name: "command with quotes", input: `:node add bash "my sh" --cwd '/srv/a b' x\ y`, kind: Command, argv: []string{"node", "add", "bash", "my sh", "--cwd", "/srv/a b", "x y"}},
		{name: "command with escaped quote in double quotes", input: `:call "@fs search \"x\""`, kind: Command, argv: []string{"call", `@fs search "x"`}},
		{name: "command quit", input: "  :quit  ", kind: Command, argv: []string{"quit"}},
		{name: "colon alone", input: ":", err: "type a command after ':' — :help lists them"},
		{name: "command unclosed quote", input: `:node add bash "x`, err: `unclosed " quote`},
	}
	if len(tests) < 60 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := Parse(tc.input, cat, testHistory())
			if tc.err != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v, want error containing %q", tc.input, ln, tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) error:\n  %s\nwant it to contain:\n  %s", tc.input, err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.input, err)
			}
			if ln.Kind != tc.kind || ln.Node != tc.node || ln.Tool != tc.tool {
				t.Errorf("Parse(%q) = kind %v node %q tool %q, want %v %q %q", tc.input, ln.Kind, ln.Node, ln.Tool, tc.kind, tc.node, tc.tool)
			}
			if string(ln.Args) != tc.args {
				t.Errorf("Parse(%q) args = %s, want %s", tc.input, ln.Args, tc.args)
			}
			if ln.Kind == Call && ln.Form != tc.form {
				t.Errorf("Parse(%q) form = %v, want %v", tc.input, ln.Form, tc.form)
			}
			if !slices.Equal(ln.Argv, tc.argv) {
				t.Errorf("Parse(%q) argv = %q, want %q", tc.input, ln.Argv, tc.argv)
			}
			if ln.Input != strings.TrimSpace(tc.input) {
				t.Errorf("Input = %q", ln.Input)
			}
		})
	}
}

// TestControlParameterIsNotFreeText: a graph with no inputs has only the
// optional _resume; `@g run` runs it rather than resuming a run called "run".
func TestControlParameterIsNotFreeText(t *testing.T) {
	tool := &mcp.Tool{Name: "run", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"_resume": map[string]any{"type": "string"}}}}
	ln, err := Parse("@g run", NewIndex(map[string][]*mcp.Tool{"g": {tool}}), nil)
	if err != nil || ln.Kind != Call || string(ln.Args) != "{}" {
		t.Fatalf("@g run = %+v, %v; want a call with {}", ln, err)
	}
}

// Issue 21: a tool whose schema refers to itself through anyOf recursed
// without end while the Commander read a line for it.
func TestSelfReferentialSchemaIsBounded(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","$defs":{"A":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/A"}}}`)
	tool := &mcp.Tool{Name: "t", InputSchema: schema}
	cat := NewIndex(map[string][]*mcp.Tool{"n": {tool}})
	ln, err := Parse("@n t x=hello", cat, nil)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if string(ln.Args) != `{"x":"hello"}` {
		t.Errorf("args = %s", ln.Args)
	}
	_ = typeLabel(schemaObj(decodeSchema(schema)), property0(decodeSchema(schema), "x"))
}

func property0(root schemaObj, name string) schemaObj {
	p, _ := property(root, root, name)
	return p
}

// Issue 21: a JSON value nested past encoding/json's limit is an error
// naming the limit, as an object argument and as a key=value value.
func TestDeepJSONArgumentNamesLimit(t *testing.T) {
	tool := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{}}}`)}
	cat := NewIndex(map[string][]*mcp.Tool{"n": {tool}})
	deep := strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000)
	for _, line := range []string{`@n t {"x": ` + deep + `}`, "@n t x=" + deep} {
		_, err := Parse(line, cat, nil)
		if err == nil || !strings.Contains(err.Error(), "more than 10000 deep (the limit)") {
			t.Errorf("%.12s…: %v; want the nesting limit named", line, err)
		}
	}
}

func TestParseSearch(t *testing.T) {
	for in, want := range map[string]string{"@? read a file": "read a file", "@?read  a file ": "read  a file"} {
		ln, err := Parse(in, NewIndex(nil), nil)
		if err != nil || ln.Kind != Search || ln.Words != want {
			t.Errorf("Parse(%q) = %+v, %v; want a search for %q", in, ln, err, want)
		}
	}
	if _, err := Parse("@?", NewIndex(nil), nil); err == nil || !strings.Contains(err.Error(), "@? read a file") {
		t.Errorf("Parse(@?) = %v, want an error showing how to search", err)
	}
	out := RenderSearch("zz", []Found{{Node: "fs", Tool: &mcp.Tool{Name: "read_file", Description: "Read a file.\nMore."}}}, true, 12, NewStyle(false))
	for _, want := range []string{`no tool matches "zz"; the nearest of 12`, "  @fs read_file  Read a file.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("RenderSearch:\n%s\nwant %q", out, want)
		}
	}
}
