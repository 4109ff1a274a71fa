package node

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Tool names. A qualified name is "node.tool" (people, the MCP endpoint);
// node ids have no dots, so it splits at the first dot even when an MCP
// tool name has dots of its own. LLM APIs (OpenAI, Anthropic, …) accept only
// ^[a-zA-Z0-9_-]{1,64}$, so LLMs see "node__tool" with every other character
// mapped to '_' and long names shortened with a hash. Such a name is lossy:
// it is resolved back through a Toolset's map, never by splitting.

// MaxLLMNameLen is the longest tool name LLM APIs accept.
const MaxLLMNameLen = 64

// llmSeparator joins node and tool in an LLM-safe name.
const llmSeparator = "__"

// hashHexLen is how many hex digits of sha256 a shortened or
// disambiguated name carries: 40 bits, enough that two tools of one
// session never meet by accident.
const hashHexLen = 10

// QualifiedName returns "node.tool".
func QualifiedName(node, tool string) string { return node + "." + tool }

// SplitQualified splits a qualified name "node.tool" at the first dot. It
// reports false when name has no dot or either side is empty.
func SplitQualified(name string) (node, tool string, ok bool) {
	node, tool, ok = strings.Cut(name, ".")
	if !ok || node == "" || tool == "" {
		return "", "", false
	}
	return node, tool, true
}

// LLMName returns the LLM-safe name of a node's tool: "node__tool" with
// every character outside [a-zA-Z0-9_-] mapped to '_', shortened to a
// readable prefix plus a hash of the qualified name when it is longer than
// 64 characters. Two tools may share an LLMName (a.b-c and a.b_c do not, but
// x."a.b" and x."a_b" do); a Toolset gives each of those the hash form.
func LLMName(node, tool string) string {
	base := llmBase(node, tool)
	if len(base) <= MaxLLMNameLen {
		return base
	}
	return hashedName(base, QualifiedName(node, tool), hashHexLen)
}

// hashedName is base cut to a prefix, then '_' and hexLen hex digits of the
// sha256 of the qualified name, at most MaxLLMNameLen long. The hash is of
// the qualified name, not of base, so tools whose names sanitize alike
// still get different names.
func hashedName(base, qualified string, hexLen int) string {
	sum := sha256.Sum256([]byte(qualified))
	h := hex.EncodeToString(sum[:])[:hexLen]
	if keep := MaxLLMNameLen - 1 - hexLen; len(base) > keep {
		base = base[:keep] // base is ASCII: any cut is clean
	}
	return base + "_" + h
}

// llmBase is node + "__" + tool with every byte outside [a-zA-Z0-9_-]
// mapped to '_' (a multi-byte UTF-8 character to a single '_'), built in
// one allocation.
func llmBase(node, tool string) string {
	var b strings.Builder
	b.Grow(len(node) + len(llmSeparator) + len(tool)) // never shorter than the result
	writeSanitized(&b, node)
	b.WriteString(llmSeparator)
	writeSanitized(&b, tool)
	return b.String()
}

func writeSanitized(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !llmSafe(c) {
				c = '_'
			}
			b.WriteByte(c)
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		b.WriteByte('_')
		i += n
	}
}

func llmSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// ValidLLMName reports whether name is acceptable to LLM APIs.
func ValidLLMName(name string) bool {
	if len(name) == 0 || len(name) > MaxLLMNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !llmSafe(name[i]) {
			return false
		}
	}
	return true
}
