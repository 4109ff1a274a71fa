package graphlang

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets of issue 21, item 5. Each has a property beyond "no
// panic", and the *Deep targets build their input from a depth the fuzzer
// picks, so nesting far past every limit is reached (random bytes alone
// never nest deep: FuzzExpand ran 3.3 M inputs and never got there). Every
// crasher is kept under testdata/fuzz/<target>; .ci/run runs each target
// for a bounded time.

// nestExpr nests inner depth times in the form kind picks.
func nestExpr(kind byte, depth int, inner string) string {
	switch kind % 4 {
	case 0:
		return strings.Repeat("(", depth) + inner + strings.Repeat(")", depth)
	case 1:
		return strings.Repeat("!", depth) + inner
	case 2:
		return strings.Repeat("!(", depth) + inner + strings.Repeat(")", depth)
	default:
		return strings.Repeat("(true && ", depth) + inner + strings.Repeat(")", depth)
	}
}

// negations is how many '!' nestExpr put around inner.
func negations(kind byte, depth int) int {
	switch kind % 4 {
	case 1, 2:
		return depth
	}
	return 0
}

// FuzzExprDeep: conditions nested to any depth. Beyond the limits the
// error names the limit; within them the condition parses and means what
// its nesting says.
func FuzzExprDeep(f *testing.F) {
	f.Add(uint32(150_000), byte(0), "true")
	f.Add(uint32(199_999), byte(1), "true")
	f.Add(uint32(64), byte(2), "${inputs.n} > 2")
	f.Add(uint32(3), byte(3), "false")
	sc := &Scope{Inputs: map[string]any{"n": 3.0}, Results: func(string) *StepResult { return nil }}
	f.Fuzz(func(t *testing.T, depth uint32, kind byte, inner string) {
		// The 2,000,000- and 7,000,000-deep repros are TestExprLimits'; here
		// each input stays small enough that an exec is fast.
		d := int(depth % 200_000)
		if len(inner) > 64 {
			inner = inner[:64]
		}
		src := nestExpr(kind, d, inner)
		e, err := ParseExpr(src)
		levels := d // '(' and '!' each nest once; "!(" twice
		if kind%4 == 2 {
			levels = 2 * d
		}
		if len(src) > MaxConditionLen {
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over the limit of %d", MaxConditionLen)) {
				t.Fatalf("%d bytes: %v; want the length limit named", len(src), err)
			}
			return
		}
		inE, inErr := ParseExpr(inner)
		if inErr != nil {
			return // the inner text is no condition: its own error may come first
		}
		if levels > MaxConditionDepth {
			if err == nil || !strings.Contains(err.Error(), "(the limit of '(' and '!'") {
				t.Fatalf("nesting %d deep: %v; want the limit named", levels, err)
			}
			return
		}
		if err != nil && strings.Contains(err.Error(), "(the limit of '(' and '!'") &&
			levels+strings.Count(inner, "(")+strings.Count(inner, "!") > MaxConditionDepth {
			return // the inner text nests too: 64 '(' around "!0" is 65 deep
		}
		if err != nil {
			// Within the limits, nesting a condition keeps it one, unless
			// the inner text relied on binding looser than the wrapper
			// (!a == b is !(a) == b).
			if kind%4 == 0 || kind%4 == 2 {
				t.Fatalf("%q: %v, though %q parses", src, err, inner)
			}
			return
		}
		if kind%4 == 1 && (strings.Contains(inner, "&&") || strings.Contains(inner, "||")) {
			return // !a || b is (!a) || b: the '!' does not cover all of inner
		}
		want, wErr := inE.Eval(sc)
		got, gErr := e.Eval(sc)
		if (wErr == nil) != (gErr == nil) {
			t.Fatalf("%q: eval error %v, inner %v", src, gErr, wErr)
		}
		if wErr == nil && negations(kind, d)%2 == 1 {
			want = !want
		}
		if wErr == nil && got != want {
			t.Fatalf("%q = %v, want %v", src, got, want)
		}
	})
}

// FuzzParseExpr: any text either parses or fails; what parses evaluates
// without panicking, and its source round-trips.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{"${inputs.n} == 3", "!(${steps.a.is_error})", "'a' < \"b\" || null", "((1))", "!!!true", "${", "1 2", "${inputs.s} >= -1.5e3"} {
		f.Add(s)
	}
	sc := &Scope{Inputs: map[string]any{"n": 3.0, "s": "x"}, Results: func(string) *StepResult { return &StepResult{Text: "t"} }, Item: 1.0, HasItem: true}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseExpr(src)
		if err != nil {
			if len(err.Error()) > 2*MaxConditionLen+500 {
				t.Fatalf("a %d-byte message", len(err.Error()))
			}
			return
		}
		if e.src != src {
			t.Fatalf("source %q kept as %q", src, e.src)
		}
		_, _ = e.Eval(sc)
	})
}

// FuzzTemplateString: a string compiles or fails; with no reference it is
// the text with each $${ made ${ (docs/graphs.md), with references each
// one resolves.
func FuzzTemplateString(f *testing.F) {
	for _, s := range []string{"$${inputs.x}", "a ${inputs.x} b", "${steps.a.structured.k[0]}", "$$${x}", "${item}", "${", "$${", "}${inputs.x}$${"} {
		f.Add(s)
	}
	sc := &Scope{Inputs: map[string]any{"x": "X"}, Results: func(string) *StepResult { return &StepResult{Text: "T"} }, Item: "I", HasItem: true}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := compileTemplate(s)
		if err != nil {
			return
		}
		v, err := tpl.Eval(sc)
		if len(tpl.refs) == 0 {
			if want := strings.ReplaceAll(s, "$${", "${"); err != nil || v != want {
				t.Fatalf("%q = %q, %v; want %q", s, v, err, want)
			}
		}
	})
}

// FuzzGraphDeep: args nested to any depth in a graph file; beyond
// MaxTemplateDepth (or yaml's own 10000) the error names a limit.
func FuzzGraphDeep(f *testing.F) {
	f.Add(uint32(65), false)
	f.Add(uint32(20000), true)
	f.Add(uint32(10), false)
	f.Fuzz(func(t *testing.T, depth uint32, maps bool) {
		d := int(depth % 200_000)
		open, close := "[", "]"
		if maps {
			open, close = "{k: ", "}"
		}
		src := "steps:\n  a:\n    call: echo.identity\n    args: {text: " + strings.Repeat(open, d) + "x" + strings.Repeat(close, d) + "}\n"
		_, err := Parse([]byte(src))
		switch {
		case len(src) > MaxSourceSize:
			if err == nil || !strings.Contains(err.Error(), "(1 MiB, the limit)") {
				t.Fatalf("%d bytes: %v", len(src), err)
			}
		case d+1 > MaxTemplateDepth:
			if err == nil || !strings.Contains(err.Error(), "limit") && !strings.Contains(err.Error(), "max depth") {
				t.Fatalf("args nesting %d deep: %v; want a limit named", d+1, err)
			}
		case err != nil:
			t.Fatalf("args nesting %d deep: %v", d+1, err)
		}
	})
}

// FuzzParse: any graph file parses or fails with positioned errors, never
// a panic; what parses names its steps and has no cycle.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../../../docs/examples/*.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("steps:\n  a: {call: echo.identity, args: {text: hi}}\n  b: {call: echo.identity, args: {text: '${steps.a.text}'}, when: '${steps.a.is_error} == false'}\noutput: ${steps.b.text}\n"))
	f.Add([]byte("inputs: {xs: array}\nsteps:\n  each: {call: e.t, foreach: '${inputs.xs}', args: {v: '${item}'}}\n"))
	f.Add([]byte("steps:\n  a: {call: e.t, after: b}\n  b: {call: e.t, after: a}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := Parse(src)
		if err != nil {
			return
		}
		for _, s := range d.Steps {
			if d.Step(s.ID) != s {
				t.Fatalf("step %q not found by id", s.ID)
			}
		}
		if c := findCycle(d); c != nil {
			t.Fatalf("a parsed graph has a cycle %v", c)
		}
	})
}
