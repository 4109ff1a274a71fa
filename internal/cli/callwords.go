package cli

import "strings"

// callLine joins nerve call's words into a Commander line that the
// Commander splits into the same words: each word is quoted for a shell
// where it needs it (in single quotes; a quote inside is closed, escaped
// and reopened), which both the Commander's
// key=value reader and a bash node read back as the one word it was. The
// first word, a lone ?, and JSON ({…} or […]) stay as they are; in
// key=value only the value is quoted. A line with one word after the node
// is left as it is.
func callLine(words []string) string {
	if len(words) <= 2 {
		// One word after the node: the person quoted the whole rest for
		// nerve (`nerve call @bash 'ls | wc -l'`, `nerve call @echo "a b"`):
		// it is the text (or JSON) as it is.
		return strings.TrimSpace(strings.Join(words, " "))
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case i == 0, w == "?", strings.HasPrefix(w, "{"), strings.HasPrefix(w, "["):
			b.WriteString(w)
		default:
			if k, v, ok := strings.Cut(w, "="); ok && isKey(k) {
				b.WriteString(k)
				b.WriteByte('=')
				if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
					b.WriteString(v)
				} else {
					b.WriteString(shellQuote(v))
				}
				continue
			}
			b.WriteString(shellQuote(w))
		}
	}
	return strings.TrimSpace(b.String())
}

// isKey reports whether k can be the key of a key=value word.
func isKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// shellQuote quotes w for a POSIX shell unless every byte of it is plain
// (a trailing ? is left alone: `@fs read_file?` asks for help).
func shellQuote(w string) string {
	if w == "" {
		return "''"
	}
	plain := true
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 || strings.IndexByte("_-./:@%+,=^", c) >= 0 || c == '?' && i == len(w)-1 {
			continue
		}
		plain = false
		break
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
