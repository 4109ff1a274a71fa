package commander

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxBytes is how much of a result RenderResult prints when
// RenderOptions.MaxBytes is 0: about a thousand lines.
const DefaultMaxBytes = 64 << 10

// RenderOptions control RenderResult.
type RenderOptions struct {
	// Style colours the output; nil is plain.
	Style *Style
	// MaxBytes is the most of the result's text printed; the rest is in
	// Rendered.Full. 0 means DefaultMaxBytes; negative means no limit.
	MaxBytes int
	// HideStructuredBesideText leaves structured content out when the
	// result also has text that is not its mirror: the text is what the
	// tool wrote for people, the structure is for programs (which use
	// `nerve call --json`). A bash node's {"exit_code": 0} is one such.
	HideStructuredBesideText bool
}

// Attachment is binary content (an image, audio, a blob resource) for the
// REPL to save to a file.
type Attachment struct {
	Name string // suggested file name: "image-1.png"
	MIME string
	Data []byte // raw bytes (already base64-decoded)
	// Placeholder stands in Rendered.Text where the saved file's path goes;
	// Rendered.Fill replaces it.
	Placeholder string
}

// Rendered is a result ready to print.
type Rendered struct {
	// Text is what to print, ending in "\n" (coloured if asked).
	Text string
	// Value is the result as plain text for block references: the text
	// contents joined, else the structured content as JSON. Never cut.
	Value string
	// IsError mirrors the result's isError.
	IsError bool
	// Truncated says Text shows only the first MaxBytes; Full holds the
	// whole plain text and FullPlaceholder stands in Text where the path of
	// the file the REPL saves it to goes.
	Truncated       bool
	Full            string
	FullPlaceholder string
	Attachments     []Attachment
}

// Fill puts the paths the REPL saved attachments (in order) and the full
// text to in place of their placeholders in Text and Full.
func (r *Rendered) Fill(attachmentPaths []string, fullPath string) {
	var pairs []string
	for i, a := range r.Attachments {
		if i < len(attachmentPaths) {
			pairs = append(pairs, a.Placeholder, attachmentPaths[i])
		}
	}
	if r.FullPlaceholder != "" && fullPath != "" {
		pairs = append(pairs, r.FullPlaceholder, fullPath)
	}
	if len(pairs) == 0 {
		return
	}
	rep := strings.NewReplacer(pairs...)
	r.Text = rep.Replace(r.Text)
	r.Full = rep.Replace(r.Full)
}

// part is one piece of a result: its plain text and how to colour it.
type part struct {
	text string
	kind partKind
}

type partKind int

const (
	partText partKind = iota // tool output as is (red when the result is an error)
	partJSON                 // pretty JSON
	partMeta                 // a line about content (attachment, resource)
	partLink                 // a resource link
)

// RenderResult renders a call's result: text as is; structured content as
// indented JSON (coloured when opt.Style has colour); images, audio and blob
// resources as attachments with a placeholder line; resource links as
// links; an error result marked "error:" and in red. Output beyond
// opt.MaxBytes is cut at a line end, with a closing line saying how much
// more there is and where the full text is.
func RenderResult(res *mcp.CallToolResult, opt RenderOptions) *Rendered {
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	rp := resultParts{r: &Rendered{IsError: res.IsError}, structuredContent: res.StructuredContent}
	if res.StructuredContent != nil {
		bp := encodeBuffers.Get().(*[]byte)
		structured := marshalNoEscape((*bp)[:0], res.StructuredContent)
		rp.structured = structured
		defer func() {
			if cap(structured) <= 16<<20 {
				*bp = structured[:0]
				encodeBuffers.Put(bp)
			}
		}()
	}
	var values []string // kept here, not in rp: a short one stays on the stack
	for _, c := range res.Content {
		if v, ok := rp.add(c); ok {
			values = append(values, v)
		}
	}
	rp.end(values, opt.HideStructuredBesideText)
	r := rp.r
	r.Text = paintParts(r.cut(rp.parts, opt.MaxBytes), opt.Style, r.IsError)
	return r
}

// resultParts gathers the parts of a result, in order.
type resultParts struct {
	r                 *Rendered
	structuredContent any
	structured        []byte // structuredContent as compact JSON
	parts             []part
	structuredShown   bool
	hasText           bool
}

// pretty is the structured content as indented JSON.
func (rp *resultParts) pretty() string {
	if raw, ok := rp.structuredContent.(json.RawMessage); ok {
		return prettyJSON(raw)
	}
	// Indentation roughly doubles nested JSON; a good first guess
	// saves the copies of growing the buffer.
	return string(append(indentJSON(make([]byte, 0, len(rp.structured)*5/2+64), rp.structured), '\n'))
}

// add takes one content block; it returns the block's text for the
// result's Value, if it has some.
func (rp *resultParts) add(c mcp.Content) (value string, ok bool) {
	switch c := c.(type) {
	case *mcp.TextContent:
		rp.hasText = true
		if rp.structured != nil && !rp.structuredShown && sameJSON(c.Text, rp.structured) {
			// The SDK mirrors structured output as JSON text: show it
			// once, indented.
			rp.parts = append(rp.parts, part{rp.pretty(), partJSON})
			rp.structuredShown = true
			return c.Text, true
		}
		rp.parts = append(rp.parts, part{withNewline(c.Text), partText})
		return c.Text, true
	case *mcp.ImageContent:
		rp.parts = append(rp.parts, rp.r.attach("image", c.MIMEType, "", c.Data))
	case *mcp.AudioContent:
		rp.parts = append(rp.parts, rp.r.attach("audio", c.MIMEType, "", c.Data))
	case *mcp.ResourceLink:
		rp.parts = append(rp.parts, part{linkLine(c), partLink})
	case *mcp.EmbeddedResource:
		return rp.addResource(c.Resource)
	default:
		b := marshalNoEscape(nil, c)
		rp.parts = append(rp.parts, part{prettyJSON(b), partJSON})
	}
	return "", false
}

// addResource takes an embedded resource: text shown, a blob attached.
func (rp *resultParts) addResource(rc *mcp.ResourceContents) (value string, ok bool) {
	if rc == nil {
		return "", false
	}
	if rc.Blob != nil {
		rp.parts = append(rp.parts, rp.r.attach("resource", rc.MIMEType, rc.URI, rc.Blob))
		return "", false
	}
	rp.parts = append(rp.parts, part{fmt.Sprintf("[resource %s%s]\n", rc.URI, paren(rc.MIMEType)), partMeta})
	rp.parts = append(rp.parts, part{withNewline(rc.Text), partText})
	return rc.Text, true
}

// end adds what follows the content: the structured content if no text
// mirrored it (and text does not stand for it), "(no output)", the error
// mark; and sets the Value from the blocks' values.
func (rp *resultParts) end(values []string, hideStructuredBesideText bool) {
	if rp.structured != nil && !rp.structuredShown && !(rp.hasText && hideStructuredBesideText) {
		rp.parts = append(rp.parts, part{rp.pretty(), partJSON})
	}
	if len(values) == 0 && rp.structured != nil {
		values = append(values, string(rp.structured))
	}
	// Like a shell's $(…), a reference drops the trailing newlines.
	rp.r.Value = strings.TrimRight(strings.Join(values, "\n"), "\n")
	if len(rp.parts) == 0 {
		rp.parts = append(rp.parts, part{"(no output)\n", partMeta})
	}
	if rp.r.IsError {
		rp.parts = append([]part{{"error: ", partMeta}}, rp.parts...)
	}
}

// cut returns the parts that fit in maxBytes (0: DefaultMaxBytes,
// negative: no limit), cut at a line end and followed by a line saying
// what is not shown; the whole text goes to r.Full.
func (r *Rendered) cut(parts []part, maxBytes int) []part {
	limit := maxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	total := 0
	for _, p := range parts {
		total += len(p.text)
	}
	if limit <= 0 || total <= limit {
		return parts
	}
	if len(parts) == 1 {
		r.Full = parts[0].text // no copy of a large single part
	} else {
		var full strings.Builder
		full.Grow(total)
		for _, p := range parts {
			full.WriteString(p.text)
		}
		r.Full = full.String()
	}
	r.Truncated = true
	r.FullPlaceholder = "⟪full output⟫"
	cut := cutPoint(r.Full, limit)
	kept := keepPrefix(parts, cut)
	rest := r.Full[cut:]
	lines := strings.Count(rest, "\n")
	if !strings.HasSuffix(rest, "\n") {
		lines++
	}
	unit := "lines"
	if lines == 1 {
		unit = "line"
	}
	return append(kept, part{fmt.Sprintf("… %s more (%s %s) not shown; full output: %s\n",
		sizeString(len(rest)), commas(lines), unit, r.FullPlaceholder), partMeta})
}

// paintParts joins parts, coloured by st: JSON by token, meta lines dim,
// links as links, an error's text red.
func paintParts(parts []part, st *Style, isError bool) string {
	var b strings.Builder
	size := 0
	for _, p := range parts {
		size += len(p.text)
	}
	if st.on() {
		size += size / 2 // colour codes around most JSON tokens
	}
	b.Grow(size + 64)
	for _, p := range parts {
		switch {
		case !st.on():
			b.WriteString(p.text)
		case p.kind == partJSON:
			colorJSON(&b, p.text, st)
		case p.kind == partMeta && isError && p.text == "error: ":
			b.WriteString(st.paint(boldRed, p.text))
		case p.kind == partMeta:
			b.WriteString(paintLines(st, dim, p.text))
		case p.kind == partLink:
			b.WriteString(paintLines(st, link, p.text))
		case isError:
			b.WriteString(paintLines(st, red, p.text))
		default:
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// attach records binary content and returns its placeholder line.
func (r *Rendered) attach(what, mime, uri string, data []byte) part {
	n := len(r.Attachments) + 1
	name := fmt.Sprintf("%s-%d%s", what, n, extension(mime))
	if uri != "" {
		if base := path.Base(uri); base != "" && base != "/" && base != "." && !strings.Contains(base, ":") {
			name = fmt.Sprintf("%d-%s", n, base)
		}
	}
	a := Attachment{Name: name, MIME: mime, Data: data, Placeholder: fmt.Sprintf("⟪attachment %d⟫", n)}
	r.Attachments = append(r.Attachments, a)
	desc := what
	if uri != "" {
		desc += " " + uri
	}
	return part{fmt.Sprintf("[%s, %s, %s: %s]\n", desc, orUnknown(mime), sizeString(len(data)), a.Placeholder), partMeta}
}

func linkLine(c *mcp.ResourceLink) string {
	var b strings.Builder
	b.WriteString("→ ")
	if c.Name != "" && c.Name != c.URI {
		b.WriteString(c.Name + " ")
	}
	b.WriteString(c.URI)
	var info []string
	if c.Title != "" {
		info = append(info, c.Title)
	}
	if c.Description != "" {
		info = append(info, firstLine(c.Description))
	}
	if c.MIMEType != "" {
		info = append(info, c.MIMEType)
	}
	if c.Size != nil {
		info = append(info, sizeString(int(*c.Size)))
	}
	if len(info) > 0 {
		b.WriteString(" (" + strings.Join(info, ", ") + ")")
	}
	b.WriteByte('\n')
	return b.String()
}

// cutPoint is where to cut text to at most limit bytes: the last line end
// in the second half of the limit, else the last whole UTF-8 character.
func cutPoint(text string, limit int) int {
	if i := strings.LastIndexByte(text[:limit], '\n'); i >= limit/2 {
		return i + 1
	}
	cut := limit
	for cut > 0 && cut < len(text) && text[cut]&0xC0 == 0x80 {
		cut--
	}
	return cut
}

// keepPrefix returns the parts covering the first cut bytes, the last one
// shortened.
func keepPrefix(parts []part, cut int) []part {
	var out []part
	for _, p := range parts {
		if cut <= 0 {
			break
		}
		if len(p.text) > cut {
			p.text = p.text[:cut]
			if !strings.HasSuffix(p.text, "\n") {
				p.text += "\n"
			}
		}
		cut -= len(p.text)
		out = append(out, p)
	}
	return out
}

func paintLines(st *Style, pick func(*Style) string, text string) string {
	// Colour each line separately so a pager or a cut line does not carry
	// the colour on.
	body, nl := strings.CutSuffix(text, "\n")
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = st.paint(pick, l)
	}
	out := strings.Join(lines, "\n")
	if nl {
		out += "\n"
	}
	return out
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// marshalNoEscape is v as compact JSON with sorted keys and no HTML
// escaping.
func marshalNoEscape(dst []byte, v any) []byte {
	if raw, ok := v.(json.RawMessage); ok && json.Valid(raw) {
		return append(dst, compactJSON(string(raw))...)
	}
	return appendJSON(dst, v, "", 0)
}

// encodeBuffers keeps the scratch buffers structured content is encoded
// into, so a large result does not grow a new one from nothing every time.
var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func prettyJSON(b []byte) string {
	var buf bytes.Buffer
	buf.Grow(len(b) + len(b)/4)
	if json.Indent(&buf, b, "", "  ") != nil {
		return withNewline(string(b))
	}
	buf.WriteByte('\n')
	return buf.String()
}

// sameJSON reports whether text is the JSON encoding of structured, up to
// white space.
func sameJSON(text string, structured []byte) bool {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return false
	}
	if t == string(structured) || bytes.Equal(unescapeHTML([]byte(t)), structured) {
		return true // a Go server's json.Marshal: compact, sorted, HTML-escaped
	}
	var a, b bytes.Buffer
	if json.Compact(&a, []byte(t)) != nil || json.Compact(&b, structured) != nil {
		return false
	}
	if bytes.Equal(a.Bytes(), b.Bytes()) || bytes.Equal(unescapeHTML(a.Bytes()), b.Bytes()) {
		return true
	}
	if len(t) > 256<<10 {
		// Decoding to compare key order would cost more than showing both.
		return false
	}
	var x any
	if json.Unmarshal([]byte(t), &x) != nil {
		return false
	}
	return bytes.Equal(marshalNoEscape(nil, x), structured)
}

// colorJSON writes indented JSON text with keys, strings, numbers and
// literals coloured. It tolerates text cut anywhere.
func colorJSON(b *strings.Builder, s string, st *Style) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			col := st.Green
			if k < len(s) && s[k] == ':' {
				col = st.Cyan
			}
			b.WriteString(col)
			b.WriteString(s[i:j])
			b.WriteString(st.Reset)
			i = j
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && strings.IndexByte("0123456789.eE+-", s[j]) >= 0 {
				j++
			}
			b.WriteString(st.Yellow)
			b.WriteString(s[i:j])
			b.WriteString(st.Reset)
			i = j
		case c == 't' || c == 'f' || c == 'n':
			j := i + 1
			for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
				j++
			}
			b.WriteString(st.Magenta)
			b.WriteString(s[i:j])
			b.WriteString(st.Reset)
			i = j
		default:
			j := i + 1
			for j < len(s) && s[j] != '"' && s[j] != '-' && (s[j] < '0' || s[j] > '9') && s[j] != 't' && s[j] != 'f' && s[j] != 'n' {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		}
	}
}

// Extension returns the file extension for content of MIME type typ: a
// table of common types first (the system's table answers text/plain with
// .asc), then the system's, then ".bin".
func Extension(typ string) string { return extension(typ) }

func extension(typ string) string {
	typ, _, _ = strings.Cut(typ, ";")
	typ = strings.TrimSpace(strings.ToLower(typ))
	if ext := commonExtension(typ); ext != "" {
		return ext
	}
	if exts, _ := mime.ExtensionsByType(typ); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}

func commonExtension(typ string) string {
	switch typ {
	case "image/png":
		return ".png"
	case "image/jpeg", "image/jpg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "image/svg+xml":
		return ".svg"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/ogg":
		return ".ogg"
	case "audio/flac":
		return ".flac"
	case "application/pdf":
		return ".pdf"
	case "application/json":
		return ".json"
	case "text/plain":
		return ".txt"
	case "application/zip":
		return ".zip"
	case "text/markdown", "text/x-markdown":
		return ".md"
	case "text/html":
		return ".html"
	case "text/csv":
		return ".csv"
	case "text/css":
		return ".css"
	case "text/javascript", "application/javascript":
		return ".js"
	case "application/xml", "text/xml":
		return ".xml"
	case "application/x-yaml", "application/yaml", "text/yaml":
		return ".yaml"
	case "application/gzip":
		return ".gz"
	case "application/octet-stream":
		return ".bin"
	}
	return ""
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// sizeString is a byte count for people: "812 B", "12.3 KB", "1.0 MB".
func sizeString(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// unescapeHTML undoes encoding/json's default escaping of <, > and &, which
// Go servers apply to the text mirror of structured output.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	b = bytes.ReplaceAll(b, []byte(`\u003c`), []byte("<"))
	b = bytes.ReplaceAll(b, []byte(`\u003e`), []byte(">"))
	return bytes.ReplaceAll(b, []byte(`\u0026`), []byte("&"))
}
