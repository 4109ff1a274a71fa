package commander

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// appendJSON encodes v as JSON without reflection for the types a decoded
// result holds (map[string]any, []any, string, float64, bool, nil), which
// is several times faster than encoding/json plus json.Indent on a 1 MB
// result. With indent "" the output is compact; otherwise it is indented
// like json.MarshalIndent. Keys are sorted and HTML is not escaped. Other
// types go through encoding/json.
func appendJSON(dst []byte, v any, indent string, depth int) []byte {
	var keys []string
	return appendValue(dst, v, indent, depth, &keys)
}

// appendValue does appendJSON's work; keys is a stack of map keys shared by
// the whole walk, so sorting the keys of ten thousand small objects does not
// allocate ten thousand slices.
func appendValue(dst []byte, v any, indent string, depth int, keys *[]string) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		return appendJSONString(dst, x)
	case float64:
		return appendFloat(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case json.Number:
		return append(dst, x...)
	case []any:
		if len(x) == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, indent, depth+1)
			dst = appendValue(dst, e, indent, depth+1, keys)
		}
		dst = newline(dst, indent, depth)
		return append(dst, ']')
	case map[string]any:
		if len(x) == 0 {
			return append(dst, "{}"...)
		}
		base := len(*keys)
		for k := range x {
			*keys = append(*keys, k)
		}
		mine := (*keys)[base:]
		slices.Sort(mine)
		dst = append(dst, '{')
		for i := range mine {
			k := (*keys)[base+i] // re-read: the stack may have moved
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, indent, depth+1)
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if indent != "" {
				dst = append(dst, ' ')
			}
			dst = appendValue(dst, x[k], indent, depth+1, keys)
		}
		*keys = (*keys)[:base]
		dst = newline(dst, indent, depth)
		return append(dst, '}')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return appendJSONString(dst, err.Error())
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if indent == "" {
		return append(dst, raw...)
	}
	var out bytes.Buffer
	prefix := string(bytes.Repeat([]byte(indent), depth))
	if json.Indent(&out, raw, prefix, indent) != nil {
		return append(dst, raw...)
	}
	return append(dst, out.Bytes()...)
}

func newline(dst []byte, indent string, depth int) []byte {
	if indent == "" {
		return dst
	}
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}

// appendFloat formats like encoding/json: shortest form, exponent only for
// very small or large magnitudes, "e-07" written "e-7".
func appendFloat(dst []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return appendJSONString(dst, strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		n := len(dst) - start
		if n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// indentJSON indents valid compact JSON like json.Indent with indent "  ",
// in one pass without json.Indent's validating scanner: our own encoder
// wrote the input.
func indentJSON(dst, src []byte) []byte {
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			// The closing quote is the next one not preceded by an odd
			// number of backslashes.
			j := i + 1
			for {
				k := bytes.IndexByte(src[j:], '"')
				if k < 0 {
					j = len(src)
					break
				}
				j += k
				n := 0
				for b := j - 1; b > i && src[b] == '\\'; b-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			j = min(j+1, len(src))
			dst = append(dst, src[i:j]...)
			i = j - 1
		case '{', '[':
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, c, src[i+1])
				i++
				continue
			}
			depth++
			dst = append(dst, c)
			dst = newline(dst, "  ", depth)
		case '}', ']':
			depth--
			dst = newline(dst, "  ", depth)
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			dst = newline(dst, "  ", depth)
		case ':':
			dst = append(dst, ':', ' ')
		case ' ', '\t', '\n', '\r':
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
