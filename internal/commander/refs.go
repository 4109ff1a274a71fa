package commander

import (
	"fmt"
	"strconv"
	"strings"
)

// refMark starts a block reference: `:::3` (block 3) or `:::fs[-1]` (the last
// output of node fs; [-2] the one before).
const refMark = ":::"

// ref is one parsed block reference.
type ref struct {
	n    int    // block number, or 0 for a node reference
	node string // node of a node reference
	back int    // 1 = the node's last output
	end  int    // index just past the reference in the text
}

// parseRef reads a reference at s[i:], which starts with refMark. ok is false
// when what follows is not a reference (the text is then left alone).
func parseRef(s string, i int) (r ref, ok bool) {
	j := i + len(refMark)
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k > j {
		n, err := strconv.Atoi(s[j:k])
		if err != nil {
			return ref{}, false
		}
		return ref{n: n, end: k}, true
	}
	for k < len(s) && isNodeIDByte(s[k]) {
		k++
	}
	if k == j || !strings.HasPrefix(s[k:], "[-") {
		return ref{}, false
	}
	node := s[j:k]
	k += 2
	d := k
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == d || k >= len(s) || s[k] != ']' {
		return ref{}, false
	}
	back, err := strconv.Atoi(s[d:k])
	if err != nil {
		return ref{}, false
	}
	return ref{node: node, back: back, end: k + 1}, true
}

func (r ref) String() string {
	if r.node == "" {
		return refMark + strconv.Itoa(r.n)
	}
	return fmt.Sprintf("%s%s[-%d]", refMark, r.node, r.back)
}

func (r ref) lookup(refs Refs) (string, error) {
	if refs == nil {
		return "", fmt.Errorf("%s: block references are not available here — paste the text instead", r)
	}
	if r.node == "" {
		if t, ok := refs.Block(r.n); ok {
			return t, nil
		}
		if h, ok := refs.(interface{ Len() int }); ok {
			if h.Len() == 0 {
				return "", fmt.Errorf("%s: no block yet — each result gets a block number as it arrives", r)
			}
			return "", fmt.Errorf("%s: no such block — blocks so far are 1 to %d", r, h.Len())
		}
		return "", fmt.Errorf("%s: no such block — each result shows its block number", r)
	}
	if t, ok := refs.NodeBlock(r.node, r.back); ok {
		return t, nil
	}
	return "", fmt.Errorf("%s: @%s has no output %d back — use :::%s[-1] for its last", r, r.node, r.back, r.node)
}

// substituteText replaces every reference in free text with the block's text
// as is.
func substituteText(s string, refs Refs) (string, error) {
	i := strings.Index(s, refMark)
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	last := 0
	for i >= 0 {
		i += last
		r, ok := parseRef(s, i)
		if !ok {
			b.WriteString(s[last : i+1])
			last = i + 1
		} else {
			text, err := r.lookup(refs)
			if err != nil {
				return "", err
			}
			b.WriteString(s[last:i])
			b.WriteString(text)
			last = r.end
		}
		i = strings.Index(s[last:], refMark)
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// substituteJSON replaces references in JSON text: inside a string the
// block's text JSON-escaped, elsewhere (a whole value) a JSON string.
func substituteJSON(s string, refs Refs) (string, error) {
	if !strings.Contains(s, refMark) {
		return s, nil
	}
	var b strings.Builder
	inStr, esc := false, false
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case esc:
				esc = false
				continue
			case c == '\\':
				esc = true
				continue
			case c == '"':
				inStr = false
				continue
			}
		} else if c == '"' {
			inStr = true
			continue
		}
		if c != ':' || !strings.HasPrefix(s[i:], refMark) {
			continue
		}
		r, ok := parseRef(s, i)
		if !ok {
			continue
		}
		text, err := r.lookup(refs)
		if err != nil {
			return "", err
		}
		b.WriteString(s[last:i])
		if inStr {
			q := appendJSONString(nil, text)
			b.Write(q[1 : len(q)-1])
		} else {
			b.Write(appendJSONString(nil, text))
		}
		last = r.end
		i = r.end - 1
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. It escapes what JSON needs
// and nothing more (no HTML escaping): arguments are not HTML.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
