package graphlang

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Issue 21, item 2: the `when:` parser recursed once per '(' and '!', and a
// condition nesting 2,000,000 parentheses (or 7,000,000 '!') overflowed the
// stack. Now nesting and length have limits named in the message, and
// nesting up to the limit still parses.
func TestExprLimits(t *testing.T) {
	atLimit := []string{
		strings.Repeat("(", MaxConditionDepth) + "true" + strings.Repeat(")", MaxConditionDepth),
		strings.Repeat("!", MaxConditionDepth) + "true",
	}
	for _, src := range atLimit {
		if _, err := ParseExpr(src); err != nil {
			t.Errorf("nesting %d deep: %v", MaxConditionDepth, err)
		}
	}
	deep := []string{
		strings.Repeat("(", MaxConditionDepth+1) + "true" + strings.Repeat(")", MaxConditionDepth+1),
		strings.Repeat("!", MaxConditionDepth+1) + "true",
		strings.Repeat("!(", 40) + "true" + strings.Repeat(")", 40),
	}
	for _, src := range deep {
		_, err := ParseExpr(src)
		if err == nil || !strings.Contains(err.Error(), "nests more than 64 deep (the limit") {
			t.Errorf("ParseExpr(%.20q…) = %v; want the nesting limit named", src, err)
		}
	}
	for _, src := range []string{
		strings.Repeat("(", 2_000_000) + "true" + strings.Repeat(")", 2_000_000),
		strings.Repeat("!", 7_000_000) + "true",
		strings.Repeat("true && ", 1000) + "true",
	} {
		_, err := ParseExpr(src)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over the limit of %d", MaxConditionLen)) {
			t.Errorf("ParseExpr of %d bytes = %v; want the length limit named", len(src), err)
		}
	}
}

// Templates nest lists and objects at most MaxTemplateDepth deep.
func TestTemplateDepthLimit(t *testing.T) {
	nest := func(n int) string {
		return "steps:\n  a:\n    call: echo.identity\n    args: {text: " + strings.Repeat("[", n) + "x" + strings.Repeat("]", n) + "}\n"
	}
	if _, err := Parse([]byte(nest(MaxTemplateDepth - 1))); err != nil {
		t.Errorf("args nesting %d deep: %v", MaxTemplateDepth-1, err)
	}
	_, err := Parse([]byte(nest(MaxTemplateDepth + 1)))
	if err == nil || !strings.Contains(err.Error(), "more than 64 deep (the limit)") {
		t.Errorf("args nesting %d deep: %v; want the limit named", MaxTemplateDepth+1, err)
	}
}

// A graph's source is at most MaxSourceSize bytes; the repro's 4 MB graph
// is refused before it is parsed.
func TestSourceSizeLimit(t *testing.T) {
	src := "steps:\n  a:\n    call: echo.identity\n    args: {text: x}\n    when: \"" +
		strings.Repeat("(", 2_000_000) + "true" + strings.Repeat(")", 2_000_000) + "\"\n"
	_, err := Parse([]byte(src))
	if err == nil || !strings.Contains(err.Error(), "over 1048576 bytes (1 MiB, the limit)") {
		t.Errorf("a %d-byte graph: %v; want the size limit named", len(src), err)
	}
}

// docs/graphs.md: `$${` is a literal `${`, also in a string with no
// reference (it stayed `$${inputs.x}`).
func TestDollarEscapeWithoutReference(t *testing.T) {
	tpl, err := compileTemplate(map[string]any{"a": "$${inputs.x}", "b": "$$${x}", "c": "cost: $5"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := tpl.Eval(&Scope{})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	for k, want := range map[string]string{"a": "${inputs.x}", "b": "$${x}", "c": "cost: $5"} {
		if m[k] != want {
			t.Errorf("%s = %q, want %q", k, m[k], want)
		}
	}
}

// A parse error quotes at most a short piece of the token it names: a
// 4,000-byte string of control bytes quoted whole made a 16 KB message (the
// fuzz target FuzzParseExpr found it in CI).
func TestExprErrorQuotesAShortPiece(t *testing.T) {
	long := strings.Repeat("\x01", MaxConditionLen-20)
	for _, src := range []string{
		"1 '" + long + "'",
		"true && '" + long + "' '" + long[:10] + "'",
		"(" + "'" + long + "' ==",
		"1 " + strings.Repeat("é", 1500),
	} {
		_, err := ParseExpr(src)
		if err == nil {
			t.Fatalf("ParseExpr(%.20q…) parsed", src)
		}
		if n := len(err.Error()); n > 400 {
			t.Errorf("ParseExpr(%.20q…): a %d-byte message: %.120s", src, n, err)
		}
		if !utf8.ValidString(err.Error()) {
			t.Errorf("ParseExpr(%.20q…): message is not UTF-8: %q", src, err)
		}
	}
}
