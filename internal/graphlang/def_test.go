package graphlang

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseErrorsNamePlace(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"yaml syntax", "steps:\n  a: {call: x.y\n", "reading the graph: "},
		{"no steps", "inputs: {a: string}\n", "has no `steps:`"},
		{"unknown field", "steps:\n  a: {call: e.identity, argz: {}}\n", `2:25: unknown field "argz" in step a; did you mean "args"?`},
		{"call not qualified", "steps:\n  a: {call: identity}\n", "2:13: step a: call \"identity\" must name a tool as node.tool"},
		{"unknown step ref", "steps:\n  read: {call: e.identity, args: {text: x}}\n  b: {call: e.identity, args: {text: \"${steps.raed.text}\"}}\n",
			`3:38: ${steps.raed.text}: no step "raed"; did you mean "read"?`},
		{"unknown input", "inputs: {file: string}\nsteps:\n  a: {call: e.identity, args: {text: \"${inputs.fiel}\"}}\n",
			`no input "fiel"; did you mean "file"?`},
		{"bad field", "steps:\n  a: {call: e.identity}\n  b: {call: e.identity, args: {text: \"${steps.a.txt}\"}}\n", `did you mean "text"?`},
		{"cycle", "steps:\n  a: {call: e.identity, args: {text: \"${steps.c.text}\"}}\n  b: {call: e.identity, after: a}\n  c: {call: e.identity, after: [b]}\n",
			"the steps form a cycle: a → b → c → a"},
		{"self", "steps:\n  a: {call: e.identity, args: {text: \"${steps.a.text}\"}}\n", "a step cannot use its own result"},
		{"when syntax", "steps:\n  a: {call: e.identity, when: \"${inputs.x} ==\"}\n", "when: the condition ends too soon"},
		{"item outside foreach", "steps:\n  a: {call: e.identity, args: {text: \"${item}\"}}\n", "only known inside a step with `foreach:`"},
		{"on_error", "steps:\n  a: {call: e.identity, on_error: ignore}\n", "on_error must be fail, skip or continue"},
		{"timeout", "steps:\n  a: {call: e.identity, timeout: soon}\n", "2:34: step a: timeout must be a duration"},
		{"after unknown", "steps:\n  a: {call: e.identity, after: [bb]}\n", `after "bb": no step "bb"`},
		{"dup json key", `{"steps": {"a": {"call": "e.identity"}, "a": {"call": "e.identity"}}}`, `1:41: step "a" is defined twice (first at 1:12)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil {
				t.Fatalf("Parse accepted it; want an error with %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseDependenciesAndSchema(t *testing.T) {
	d, err := Parse([]byte(`
inputs: {file: {type: string, description: file to review}, n: {type: integer, default: 2}}
steps:
  read:   {call: fs.read_text_file, args: {path: "${inputs.file}"}}
  stats:  {call: bash.bash, args: {command: "wc -l ${inputs.file}"}}
  review: {call: claude.ask_claude, args: {message: "Review:\n${steps.read.text}"}, retry: {attempts: 3, backoff: 2s}, timeout: 5m}
  save:   {call: mem.create_entities, args: {x: "${steps.stats.structured.a[0]}"}, when: "${steps.review.is_error} == false"}
output: "${steps.review.text}"
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Step("save").Deps, ","); got != "stats,review" {
		t.Errorf("save depends on %q, want stats,review", got)
	}
	if got := d.Step("review").Retry; got.Attempts != 3 || got.Backoff.String() != "2s" {
		t.Errorf("retry = %+v", got)
	}
	s := d.InputSchema()
	if req, _ := s["required"].([]any); len(req) != 1 || req[0] != "file" {
		t.Errorf("required = %v, want [file]", s["required"])
	}
}

func TestCheckCalls(t *testing.T) {
	echo := &mcp.Tool{Name: "identity", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}},
		"required": []any{"text"}, "additionalProperties": false,
	}}
	run := &mcp.Tool{Name: "run", InputSchema: map[string]any{"type": "object"}}
	// An open schema, as most MCP servers write them.
	open := &mcp.Tool{Name: "count", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}},
		"required": []any{"text"},
	}}
	tools := map[string]*mcp.Tool{"echo.identity": echo, "other.run": run, "open.count": open}
	parse := func(src string) *Def {
		d, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name, src, want string
		graphs          map[string]*Def
	}{
		{"unknown tool", "steps:\n  a: {call: echo.identiy, args: {text: x}}\n", "2:13: step a calls echo.identiy: no such tool; did you mean echo.identity?", nil},
		{"static args", "steps:\n  a: {call: echo.identity, args: {txt: x}}\n", "2:34: step a: arguments of echo.identity: invalid arguments: unknown argument \"txt\"", nil},
		{"dynamic args names", "inputs: {x: string}\nsteps:\n  a: {call: echo.identity, args: {txt: \"${inputs.x}\"}}\n", `no argument "txt"; did you mean "text"?`, nil},
		// Checked even where other arguments hold references (issue 17, item 7).
		{"missing required with references", "inputs: {x: string}\nsteps:\n  a: {call: open.count, args: {limit: \"${inputs.x}\"}}\n", `missing required argument "text"`, nil},
		{"misspelt key in an open schema", "inputs: {x: string}\nsteps:\n  a: {call: open.count, args: {text: \"${inputs.x}\", limt: 3}}\n", `no argument "limt"; did you mean "limit"?`, nil},
		{"input type vs argument type", "inputs: {n: string}\nsteps:\n  a: {call: open.count, args: {text: x, limit: \"${inputs.n}\"}}\n", `input n is a string, but argument "limit" takes integer; declare the input as {type: integer}`, nil},
		{"cycle across graphs", "steps:\n  a: {call: other.run}\n", "step a calls graph other, which calls back: me → other → me",
			map[string]*Def{"other": parse("steps:\n  b: {call: me.run}\n")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCalls(parse(tt.src), "me", tools, tt.graphs, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
	for _, good := range []string{
		"steps:\n  a: {call: echo.identity, args: {text: x}}\n",
		"inputs: {n: integer, s: string}\nsteps:\n  a: {call: open.count, args: {text: \"${inputs.s}\", limit: \"${inputs.n}\", other: 1}}\n",
	} {
		if err := CheckCalls(parse(good), "me", tools, nil, nil); err != nil {
			t.Fatalf("a good graph: %v\n%s", err, good)
		}
	}
}

func TestExpr(t *testing.T) {
	sc := &Scope{
		Inputs: map[string]any{"n": 3.0, "s": "abc", "ok": true, "list": []any{1.0}},
		Results: func(id string) *StepResult {
			if id == "a" {
				return &StepResult{Text: "42", IsError: false, Structured: map[string]any{"k": []any{"x"}}}
			}
			return nil
		},
	}
	tests := []struct {
		src  string
		want bool
	}{
		{"${inputs.n} == 3", true},
		{"${inputs.n} > 2 && ${inputs.n} <= 3", true},
		{"${inputs.n} < 3 || ${inputs.s} == 'abc'", true},
		{"!${inputs.ok}", false},
		{"!(${inputs.n} == 3)", false},
		{"${steps.a.is_error} == false", true},
		{"${steps.a.text} == 42", true},
		{"${steps.a.text} >= 40", true},
		{"${steps.a.structured.k[0]} == \"x\"", true},
		{"${steps.b.text} == null", true},
		{"${inputs.list}", true},
		{"${inputs.s} < 'abd'", true},
	}
	for _, tt := range tests {
		e, err := ParseExpr(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		got, err := e.Eval(sc)
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.src, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "${inputs.n} ==", "(true", "foo == 1", "'abc", "1 2", "${inputs.n} = 1"} {
		if _, err := ParseExpr(bad); err == nil {
			t.Errorf("ParseExpr(%q) accepted it", bad)
		}
	}
	e, _ := ParseExpr("${inputs.s} < 1")
	if _, err := e.Eval(sc); err == nil || !strings.Contains(err.Error(), "cannot compare a string < a number") {
		t.Errorf("comparing a string with a number: %v", err)
	}
}

func TestTemplateKeepsTypes(t *testing.T) {
	tpl, err := compileTemplate(map[string]any{
		"whole":  "${inputs.obj}",
		"inline": "n=${inputs.obj} s=${inputs.s}$${not}",
		"list":   []any{"${inputs.s}", 1.0},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := tpl.Eval(&Scope{Inputs: map[string]any{"obj": map[string]any{"a": 1.0}, "s": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if _, ok := m["whole"].(map[string]any); !ok {
		t.Errorf("whole = %#v, want the object", m["whole"])
	}
	if m["inline"] != `n={"a":1} s=x${not}` {
		t.Errorf("inline = %q", m["inline"])
	}
	if l := m["list"].([]any); l[0] != "x" || l[1] != 1.0 {
		t.Errorf("list = %v", l)
	}
}
