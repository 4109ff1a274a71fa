package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultResultBytes is the size ResultText keeps when maxBytes is 0.
const DefaultResultBytes = 100 << 10

// ResultText renders a tool result as the text an LLM reads. Every content
// block is kept, in order, one after the other on its own line: text as is;
// images and audio as "[image/png 34 KB]"; resource links as
// "[resource link: name <uri> (mime)]"; embedded text resources as a
// "[resource uri (mime)]" header followed by their text, binary ones as
// "[resource uri (mime, 2 KB)]". When no block carries text, the structured
// content follows as compact JSON. A result with IsError starts with
// "Error: ".
//
// The text keeps at most maxBytes bytes of the result (0 means
// DefaultResultBytes): a longer one is cut on a UTF-8 boundary and a notice
// of under 80 bytes follows, saying how much there was, so the model knows
// it did not see everything. A nil result
// reads "(no result)"; a result with nothing in it "(no output)".
func ResultText(res *mcp.CallToolResult, maxBytes int) string {
	if maxBytes <= 0 {
		maxBytes = DefaultResultBytes
	}
	if res == nil {
		return "(no result)"
	}
	w := &limitWriter{limit: maxBytes}
	if res.IsError {
		w.WriteString("Error: ")
	}
	hasText := false
	for i, c := range res.Content {
		if i > 0 {
			w.WriteString("\n")
		}
		if writeContent(w, c) {
			hasText = true
		}
	}
	if !hasText && res.StructuredContent != nil {
		if len(res.Content) > 0 {
			w.WriteString("\n")
		}
		writeJSON(w, res.StructuredContent)
	}
	if w.total == 0 || (res.IsError && w.total == len("Error: ")) {
		if res.IsError {
			return "Error: (no details)"
		}
		return "(no output)"
	}
	return w.String()
}

// writeContent writes one content block and reports whether it was text
// (a text block or a text resource).
func writeContent(w *limitWriter, c mcp.Content) bool {
	switch c := c.(type) {
	case *mcp.TextContent:
		w.WriteString(c.Text)
		return true
	case *mcp.ImageContent:
		writeMedia(w, "image", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		writeMedia(w, "audio", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		w.WriteString("[resource link: ")
		name := c.Name
		if name == "" {
			name = c.Title
		}
		if name != "" {
			w.WriteString(name)
			w.WriteString(" ")
		}
		w.WriteString("<" + c.URI + ">")
		var attrs []string
		if c.MIMEType != "" {
			attrs = append(attrs, c.MIMEType)
		}
		if c.Size != nil {
			attrs = append(attrs, HumanBytes(*c.Size))
		}
		if len(attrs) > 0 {
			w.WriteString(" (" + strings.Join(attrs, ", ") + ")")
		}
		if c.Description != "" {
			w.WriteString(": " + c.Description)
		}
		w.WriteString("]")
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			w.WriteString("[resource (empty)]")
			return false
		}
		w.WriteString("[resource " + r.URI)
		switch {
		case len(r.Blob) > 0:
			attrs := HumanBytes(int64(len(r.Blob)))
			if r.MIMEType != "" {
				attrs = r.MIMEType + ", " + attrs
			}
			w.WriteString(" (" + attrs + ")]")
		default:
			if r.MIMEType != "" {
				w.WriteString(" (" + r.MIMEType + ")")
			}
			w.WriteString("]\n")
			w.WriteString(r.Text)
			return true
		}
	case nil:
		w.WriteString("[empty content]")
	default:
		w.WriteString("[" + contentType(c) + " content]")
	}
	return false
}

func writeMedia(w *limitWriter, kind, mime string, size int) {
	if mime == "" {
		mime = kind
	} else if !strings.HasPrefix(mime, kind+"/") {
		mime = kind + " " + mime
	}
	w.WriteString("[" + mime + " " + HumanBytes(int64(size)) + "]")
}

// contentType names a content block the SDK knows but LLM text has no use
// for (tool use in sampling messages, …) by its wire type.
func contentType(c mcp.Content) string {
	b, err := c.MarshalJSON()
	if err == nil {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &v) == nil && v.Type != "" {
			return v.Type
		}
	}
	return fmt.Sprintf("%T", c)
}

// writeJSON writes v as compact JSON.
func writeJSON(w *limitWriter, v any) {
	var b []byte
	var err error
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err = json.Compact(&buf, raw); err == nil {
			b = buf.Bytes()
		}
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		w.WriteString("[structured content that cannot be shown as JSON: " + err.Error() + "]")
		return
	}
	w.Write(b)
}

// HumanBytes formats a size for people: "512 B", "34 KB", "1.2 MB"
// (powers of 1024, one decimal at most).
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	suffix := "B"
	for _, s := range []string{"KB", "MB", "GB", "TB"} {
		if v < unit {
			break
		}
		v /= unit
		suffix = s
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + suffix
}

// limitWriter keeps the first limit bytes written and counts the rest, so
// a 20 MB result is never copied whole just to be cut.
type limitWriter struct {
	buf   []byte
	limit int
	total int
}

// slack is how far past the limit the buffer keeps bytes, so the final
// cut can back up to a UTF-8 boundary and still know what follows.
const slack = utf8.UTFMax

func (w *limitWriter) WriteString(s string) {
	w.total += len(s)
	if room := w.limit + slack - len(w.buf); room > 0 {
		w.buf = append(w.buf, s[:min(room, len(s))]...)
	}
}

func (w *limitWriter) Write(b []byte) {
	w.total += len(b)
	if room := w.limit + slack - len(w.buf); room > 0 {
		w.buf = append(w.buf, b[:min(room, len(b))]...)
	}
}

// String returns what was written, or, when that was over the limit, its
// first limit bytes (cut back to a UTF-8 boundary) followed by a notice.
func (w *limitWriter) String() string {
	if w.total <= w.limit {
		return string(w.buf)
	}
	keep := utf8Cut(w.buf, w.limit)
	return fmt.Sprintf("%s\n[... truncated: %s total, showing first %s]",
		w.buf[:keep], HumanBytes(int64(w.total)), HumanBytes(int64(keep)))
}

// utf8Cut returns the largest n ≤ keep such that b[:n] does not end inside
// a UTF-8 sequence.
func utf8Cut(b []byte, keep int) int {
	if keep >= len(b) {
		return len(b)
	}
	// b[keep] is the first byte left out: back up while it continues a
	// sequence, at most UTFMax-1 bytes (invalid input is cut anywhere).
	for i := 0; i < utf8.UTFMax-1 && keep > 0 && !utf8.RuneStart(b[keep]); i++ {
		keep--
	}
	return keep
}
