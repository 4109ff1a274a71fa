package mcpconf

import (
	"errors"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"HOME": "/home/ana", "USER": "ana", "EMPTY": "", "DOLLAR": "${HOME}"}
	tests := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"", ""},
		{"${HOME}", "/home/ana"},
		{"${HOME}/src", "/home/ana/src"},
		{"--home=${HOME}!", "--home=/home/ana!"},
		{"${USER}@${HOME}:${USER}", "ana@/home/ana:ana"},
		{"${UNSET:-fallback}", "fallback"},
		{"${UNSET:-}", ""},
		{"a${UNSET:-}b", "ab"},
		{"${HOME:-fallback}", "/home/ana"},
		{"${EMPTY}", ""},
		{"${EMPTY:-used}", "used"}, // as in the shell: empty counts as unset for :-
		{"${UNSET:-with spaces and : colons}", "with spaces and : colons"},
		{"${UNSET:-${HOME}/x}", "/home/ana/x"},
		{"${UNSET:-${ALSO_UNSET:-deep}}", "deep"},
		{"${HOME:-${UNSET}}", "/home/ana"}, // an unused default is not looked up
		{"${env:HOME}", "/home/ana"},
		{"${env:UNSET:-d}", "d"},
		{"$${HOME}", "${HOME}"},
		{"$$${HOME}", "$${HOME}"},
		{"$HOME", "$HOME"},
		{"a$$b", "a$$b"},
		{"cost: $5", "cost: $5"},
		{"trailing $", "trailing $"},
		{"{}", "{}"},
		{"${DOLLAR}", "${HOME}"}, // values are not expanded again
		{"é${USER}ü", "éanaü"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in, lookupIn(env))
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"${GITHUB_TOKEN}", "variable ${GITHUB_TOKEN} is not set (set it, or write ${GITHUB_TOKEN:-default})"},
		{"x ${HOME} ${NOPE} ${ALSO}", "variable ${NOPE} is not set (set it, or write ${NOPE:-default})"},
		{"${env:NOPE}", "variable ${env:NOPE} is not set (set it, or write ${env:NOPE:-default})"},
		{"${UNSET:-${NOPE}}", "variable ${NOPE} is not set (set it, or write ${NOPE:-default})"},
		{"${HOME", `unterminated variable reference in "${HOME": close it with } (or write $${ for a literal ${)`},
		{"a ${", `unterminated variable reference in "${": close it with } (or write $${ for a literal ${)`},
		{"${A:-x", `unterminated variable reference in "${A:-x": close it with } (or write $${ for a literal ${)`},
		{"${A:-${B:-x}", `unterminated variable reference in "${A:-${B:-x}": close it with } (or write $${ for a literal ${)`},
		{"${}", "invalid variable reference ${}: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ (or write $${ for a literal ${)"},
		{"${A B}", "invalid variable reference ${A B}: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ (or write $${ for a literal ${)"},
		{"${A-x}", "invalid variable reference ${A-x}: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ (or write $${ for a literal ${)"},
		{"${9}", "invalid variable reference ${9}: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ (or write $${ for a literal ${)"},
		{"${input:api-key}", "${input:api-key} is a VS Code input, which nerve cannot prompt for: set an environment variable and write ${NAME} instead"},
		{"${config:editor.x}", "${config:editor.x} is a VS Code variable nerve does not support: set an environment variable and write ${NAME} instead"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in, lookupIn(map[string]string{"HOME": "/h"}))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Expand(%q) = %q, %v\nwant error: %s", tt.in, got, err, tt.want)
		}
		if got != "" {
			t.Errorf("Expand(%q) returned %q with its error; want nothing passed on", tt.in, got)
		}
	}
}

func TestUnsetErrorIsTyped(t *testing.T) {
	_, err := Expand("${A:-${B}}", lookupIn(nil))
	var ue *UnsetError
	if !errors.As(err, &ue) || ue.Name != "B" {
		t.Fatalf("err = %v; want *UnsetError for B", err)
	}
}

func TestServerExpand(t *testing.T) {
	s := Server{
		Name: "gh", Transport: "stdio",
		Command: []string{"npx", "-y", "server-github"},
		Env:     map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
	}
	_, err := s.Expand(lookupIn(nil), ".mcp.json")
	const want = `.mcp.json: server "gh": variable ${GITHUB_TOKEN} is not set (set it, or write ${GITHUB_TOKEN:-default})`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}

	x, err := s.Expand(lookupIn(map[string]string{"GITHUB_TOKEN": "ghp_1"}), ".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if x.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_1" {
		t.Errorf("expanded env = %v", x.Env)
	}
	if s.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${GITHUB_TOKEN}" {
		t.Errorf("Expand changed the original server: %v", s.Env)
	}

	r := Server{Name: "api", Transport: "http", URL: "https://${HOST}/mcp", Headers: map[string]string{"Authorization": "Bearer ${T}"}}
	x, err = r.Expand(lookupIn(map[string]string{"HOST": "h.example", "T": "t"}), "")
	if err != nil || x.URL != "https://h.example/mcp" || x.Headers["Authorization"] != "Bearer t" {
		t.Errorf("remote expand = %+v, %v", x, err)
	}
	_, err = r.Expand(lookupIn(map[string]string{"HOST": "h.example"}), "")
	if err == nil || err.Error() != `server "api": variable ${T} is not set (set it, or write ${T:-default})` {
		t.Errorf("without file: err = %v", err)
	}
	_, err = r.Expand(lookupIn(map[string]string{"HOST": "", "T": "t"}), "f.json")
	if err == nil || err.Error() != `f.json: server "api": "url": "https:///mcp" is not an http:// or https:// URL` {
		t.Errorf("empty host: err = %v", err)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${HOME}", "${A:-${B:-c}}", "$${X}", "${", "${input:x}", "$", "a$$b", "${env:HOME}", "${A:-}}", "}{$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lookup := func(k string) (string, bool) {
			if strings.HasPrefix(k, "U") {
				return "", false
			}
			return "v", true
		}
		out, err := Expand(s, lookup)
		if !strings.Contains(s, "$") && (err != nil || out != s) {
			t.Fatalf("Expand(%q) = %q, %v; a string without $ must come back unchanged", s, out, err)
		}
		// Never passed on literally: every ${ left in the result came from
		// a $${ escape in the input.
		if err == nil && strings.Contains(out, "${") && !strings.Contains(s, "$${") {
			t.Fatalf("Expand(%q) = %q: a reference was passed on", s, out)
		}
		if err != nil && out != "" {
			t.Fatalf("Expand(%q) = %q with error %v", s, out, err)
		}
	})
}

func BenchmarkExpand(b *testing.B) {
	lookup := lookupIn(map[string]string{"HOME": "/home/ana", "TOKEN": "sk-0123456789"})
	for _, bc := range []struct{ name, in string }{
		{"no-refs", "@modelcontextprotocol/server-filesystem"},
		{"refs", "--home=${HOME} --token=${TOKEN} --x=${UNSET:-default}"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Expand(bc.in, lookup); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Issue 21: nesting defaults 2,500,000 deep overflowed the stack; it is an
// error naming the limit, and nesting up to the limit still works.
func TestExpandDepthLimit(t *testing.T) {
	unset := func(string) (string, bool) { return "", false }
	ok := strings.Repeat("${A:-", MaxExpandDepth) + "x" + strings.Repeat("}", MaxExpandDepth)
	if got, err := Expand(ok, unset); err != nil || got != "x" {
		t.Errorf("nesting %d deep: %q, %v; want x", MaxExpandDepth, got, err)
	}
	for _, n := range []int{MaxExpandDepth + 1, 2_500_000} {
		deep := strings.Repeat("${A:-", n) + "x" + strings.Repeat("}", n)
		_, err := Expand(deep, unset)
		if err == nil || !strings.Contains(err.Error(), "more than 32 deep (the limit)") {
			t.Errorf("nesting %d deep: %v; want the limit named", n, err)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("nesting %d deep: the message is %d bytes: it quotes the whole value", n, len(err.Error()))
		}
	}
}

// FuzzExpandDeep (issue 21, item 5): defaults nested to any depth the
// fuzzer picks, around any text. Past MaxExpandDepth the error names the
// limit; within it, an unset variable's default is the inner text
// expanded on its own.
func FuzzExpandDeep(f *testing.F) {
	f.Add(uint32(150_000), "x", false)
	f.Add(uint32(32), "${B:-y}", true)
	f.Add(uint32(5), "$${x}", false)
	unset := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, depth uint32, inner string, env bool) {
		// The 2,500,000-deep repro is TestExpandDepthLimit's; here each input
		// stays small enough that an exec is fast (a 27 MB input per exec made
		// the fuzz run end "context deadline exceeded" on a loaded machine).
		d := int(depth % 200_000)
		if len(inner) > 64 {
			inner = inner[:64]
		}
		prefix := "${A:-"
		if env {
			prefix = "${env:A:-"
		}
		s := strings.Repeat(prefix, d) + inner + strings.Repeat("}", d)
		out, err := Expand(s, unset)
		if d > MaxExpandDepth {
			if err == nil || !strings.Contains(err.Error(), "(the limit)") {
				t.Fatalf("nesting %d deep: %q, %v; want the limit named", d, clip(out), err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("a %d-byte message", len(err.Error()))
			}
			return
		}
		if strings.ContainsAny(inner, "}") {
			return // the inner text closes a default itself
		}
		want, wErr := Expand(inner, unset)
		if (err == nil) != (wErr == nil) {
			if wErr == nil && strings.Contains(err.Error(), "(the limit)") {
				return // the inner text's own defaults pass the limit here
			}
			t.Fatalf("%q: %v; alone %q: %v", s, err, inner, wErr)
		}
		if err == nil && out != want {
			t.Fatalf("%q = %q; alone %q = %q", s, out, inner, want)
		}
	})
}
