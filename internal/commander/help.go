package commander

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Found is one tool a search found: its node and the tool.
type Found struct {
	Node string
	Tool *mcp.Tool
}

// RenderSearch is what `@? WORDS` shows: the tools found, best first, each
// as the line that calls it and its description's first line; nearest
// says no tool matched the words (the tools are the nearest by spelling).
func RenderSearch(words string, found []Found, nearest bool, of int, st *Style) string {
	var b strings.Builder
	switch {
	case len(found) == 0:
		fmt.Fprintf(&b, "no tools to search: no node is ready (:node ls)\n")
		return b.String()
	case nearest:
		fmt.Fprintf(&b, "%s\n", st.paint(dim, fmt.Sprintf("no tool matches %q; the nearest of %d by spelling:", words, of)))
	}
	width := 0
	call := func(f Found) string { return "@" + f.Node + " " + f.Tool.Name }
	for _, f := range found {
		width = max(width, utf8.RuneCountInString(call(f)))
	}
	width = min(width, 40)
	for _, f := range found {
		desc := firstLine(f.Tool.Description)
		if desc == "" {
			desc = f.Tool.Title
		}
		b.WriteString("  ")
		b.WriteString(st.paint(bold, call(f)))
		if desc != "" {
			b.WriteString(strings.Repeat(" ", max(1, width-utf8.RuneCountInString(call(f))+2)))
			b.WriteString(clip(desc, 90))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s\n", st.paint(dim, "@NODE TOOL ? shows a tool's parameters"))
	return b.String()
}

// RenderToolList renders a node's tools, one line each (name and the first
// line of its description), sorted by name, with what to type next.
func RenderToolList(node string, tools []*mcp.Tool, st *Style) string {
	var b strings.Builder
	if len(tools) == 0 {
		fmt.Fprintf(&b, "%s: no tools listed yet — is it ready? (:node info %s)\n", st.paint(boldCyan, "@"+node), node)
		return b.String()
	}
	sorted := slices.Clone(tools)
	slices.SortFunc(sorted, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	n := "tools"
	if len(tools) == 1 {
		n = "tool"
	}
	fmt.Fprintf(&b, "%s: %d %s\n", st.paint(boldCyan, "@"+node), len(tools), n)
	width := 0
	for _, t := range sorted {
		width = max(width, utf8.RuneCountInString(t.Name))
	}
	width = min(width, 32)
	for _, t := range sorted {
		desc := firstLine(t.Description)
		if desc == "" {
			desc = t.Title
		}
		b.WriteString("  ")
		b.WriteString(st.paint(bold, t.Name))
		if desc != "" {
			b.WriteString(strings.Repeat(" ", max(1, width-utf8.RuneCountInString(t.Name)+2)))
			b.WriteString(clip(desc, 90))
		}
		b.WriteByte('\n')
	}
	if len(tools) == 1 {
		t := tools[0]
		if raw := rawParam(t); raw != "" {
			fmt.Fprintf(&b, "%s\n", st.paint(dim, fmt.Sprintf("@%s TEXT calls %s with TEXT as %s; @%s ? shows its parameters", node, t.Name, raw, node)))
			return b.String()
		}
	}
	fmt.Fprintf(&b, "%s\n", st.paint(dim, fmt.Sprintf("@%s TOOL ? shows a tool's parameters; @%s TOOL key=value or {JSON} calls it", node, node)))
	return b.String()
}

// RenderToolHelp renders one tool: title, description, every parameter
// (name, type, required or optional, default, allowed values, description;
// nested object and array-item properties indented under their parent),
// hints, and example lines built from the schema. single says the node has
// only this tool, so `@node TEXT` is shown as the short form.
func RenderToolHelp(node string, t *mcp.Tool, single bool, st *Style) string {
	var b strings.Builder
	b.WriteString(st.paint(boldCyan, "@"+node+" "+t.Name))
	if title := toolTitle(t); title != "" && title != t.Name {
		b.WriteString(" — " + title)
	}
	b.WriteByte('\n')
	for _, l := range strings.Split(strings.TrimSpace(t.Description), "\n") {
		if l = strings.TrimRight(l, " \t\r"); l != "" {
			b.WriteString("  " + l + "\n")
		}
	}
	s := toolSchema(t)
	var rows []helpRow
	collectRows(&rows, s, s, "", 0)
	b.WriteByte('\n')
	if len(rows) == 0 {
		b.WriteString(st.paint(bold, "Parameters:") + " none\n")
	} else {
		b.WriteString(st.paint(bold, "Parameters:") + "\n")
		nameW, typeW := 0, 0
		for _, r := range rows {
			nameW = max(nameW, utf8.RuneCountInString(r.name))
			typeW = max(typeW, utf8.RuneCountInString(r.typ))
		}
		for _, r := range rows {
			b.WriteString("  ")
			b.WriteString(st.paint(bold, r.name))
			b.WriteString(strings.Repeat(" ", nameW-utf8.RuneCountInString(r.name)+2))
			b.WriteString(st.paint(cyan, r.typ))
			b.WriteString(strings.Repeat(" ", typeW-utf8.RuneCountInString(r.typ)+2))
			if r.required {
				b.WriteString(st.paint(yellow, "required"))
			} else {
				b.WriteString(st.paint(dim, "optional"))
			}
			if r.detail != "" {
				b.WriteString("  " + r.detail)
			}
			b.WriteByte('\n')
		}
	}
	if h := hints(t); h != "" {
		b.WriteString(st.paint(bold, "Hints:") + " " + h + "\n")
	}
	if out := toolOutput(t); out != "" {
		b.WriteString(st.paint(bold, "Returns:") + " " + out + "\n")
	}
	b.WriteString(st.paint(bold, "Examples:") + "\n")
	for _, ex := range examples(node, t, single) {
		b.WriteString("  " + st.paint(green, ex) + "\n")
	}
	return b.String()
}

type helpRow struct {
	name, typ, detail string
	required          bool
}

// collectRows lists the properties of object schema s, and under each
// object (or array of objects) its own properties, up to three levels.
func collectRows(rows *[]helpRow, root, s schemaObj, indent string, depth int) {
	for _, p := range properties(root, s) {
		*rows = append(*rows, helpRow{
			name:     indent + p.Name,
			typ:      typeLabel(root, p.Schema),
			required: p.Required,
			detail:   paramDetail(p.Schema),
		})
		if depth >= 2 {
			continue
		}
		child := p.Schema
		prefix := indent + "  ."
		if items, ok := child["items"].(map[string]any); ok {
			child, prefix = resolve(root, items), indent+"  []."
		}
		if _, ok := child["properties"].(map[string]any); ok {
			collectRows(rows, root, child, prefix, depth+1)
		}
	}
}

// paramDetail is a parameter's description followed by its default,
// allowed values and bounds.
func paramDetail(p schemaObj) string {
	var parts []string
	if d, ok := p["description"].(string); ok && strings.TrimSpace(d) != "" {
		parts = append(parts, strings.Join(strings.Fields(d), " "))
	}
	var extra []string
	if d, ok := p["default"]; ok {
		extra = append(extra, "default "+compactValue(d))
	}
	if vals := enumValues(p); len(vals) > 0 {
		names := make([]string, len(vals))
		for i, v := range vals {
			names[i] = enumString(v)
		}
		extra = append(extra, "one of: "+strings.Join(names, ", "))
	}
	lo, hasLo := p["minimum"].(float64)
	hi, hasHi := p["maximum"].(float64)
	switch {
	case hasLo && hasHi:
		extra = append(extra, fmt.Sprintf("%v to %v", lo, hi))
	case hasLo:
		extra = append(extra, fmt.Sprintf("at least %v", lo))
	case hasHi:
		extra = append(extra, fmt.Sprintf("at most %v", hi))
	}
	if len(extra) > 0 {
		parts = append(parts, "("+strings.Join(extra, "; ")+")")
	}
	return strings.Join(parts, " ")
}

func compactValue(v any) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

func toolTitle(t *mcp.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil {
		return t.Annotations.Title
	}
	return ""
}

func hints(t *mcp.Tool) string {
	a := t.Annotations
	if a == nil {
		return ""
	}
	var h []string
	if a.ReadOnlyHint {
		h = append(h, "read-only")
	}
	if a.DestructiveHint != nil && *a.DestructiveHint && !a.ReadOnlyHint {
		h = append(h, "destructive")
	}
	if a.IdempotentHint {
		h = append(h, "idempotent")
	}
	if a.OpenWorldHint != nil && *a.OpenWorldHint {
		h = append(h, "reaches outside (open world)")
	}
	return strings.Join(h, ", ")
}

func toolOutput(t *mcp.Tool) string {
	if t.OutputSchema == nil {
		return ""
	}
	s := toolSchema(&mcp.Tool{InputSchema: t.OutputSchema})
	names := propertyNames(s)
	if len(names) == 0 {
		return "structured output"
	}
	return "structured output with " + strings.Join(names, ", ")
}

// examples are lines a person can copy: key=value with the required
// parameters (or the first optional one), the same as JSON, and the free
// text form when the tool has one.
func examples(node string, t *mcp.Tool, single bool) []string {
	var out []string
	raw := rawParam(t)
	if raw != "" && single {
		out = append(out, fmt.Sprintf("@%s %s", node, placeholder(toolSchema(t), raw, nil)))
	}
	out = append(out, exampleKV(node, t, false))
	if j := exampleJSON(node, t); j != "" {
		out = append(out, j)
	}
	if raw != "" && !single {
		out = append(out, fmt.Sprintf("@%s %s %s", node, t.Name, placeholder(toolSchema(t), raw, nil)))
	}
	return slices.Compact(out)
}

// exampleParams picks what an example fills in: the required parameters,
// or, when nothing is required, the one that takes free text (bash's
// command, beside its optional args and argv), else the first.
func exampleParams(s schemaObj) []param {
	ps := properties(s, s)
	var req []param
	for _, p := range ps {
		if p.Required {
			req = append(req, p)
		}
	}
	if len(req) == 0 && len(ps) > 0 {
		if raw := rawParamOf(s); raw != "" {
			for _, p := range ps {
				if p.Name == raw {
					return []param{p}
				}
			}
		}
		return ps[:1]
	}
	return req
}

func exampleKV(node string, t *mcp.Tool, _ bool) string {
	s := toolSchema(t)
	var b strings.Builder
	fmt.Fprintf(&b, "@%s %s", node, t.Name)
	for _, p := range exampleParams(s) {
		v := exampleValue(s, p.Name, p.Schema)
		text, isString := v.(string)
		if !isString {
			text = compactValue(v)
		} else if strings.ContainsAny(text, " \t\"'") || text == "" {
			text = string(appendJSONString(nil, text))
		}
		fmt.Fprintf(&b, " %s=%s", p.Name, text)
	}
	return b.String()
}

func exampleJSON(node string, t *mcp.Tool) string {
	s := toolSchema(t)
	ps := exampleParams(s)
	if len(ps) == 0 {
		return ""
	}
	b := []byte("{")
	for i, p := range ps {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSONString(b, p.Name)
		b = append(b, ": "...)
		b = append(b, compactValue(exampleValue(s, p.Name, p.Schema))...)
	}
	b = append(b, '}')
	return fmt.Sprintf("@%s %s %s", node, t.Name, b)
}

// placeholder is the example text for parameter name: its default, first
// allowed value or example, else its name in capitals.
func placeholder(root schemaObj, name string, p schemaObj) string {
	if p == nil {
		p, _ = property(root, root, name)
	}
	v := exampleValue(root, name, p)
	if s, ok := v.(string); ok {
		return s
	}
	return compactValue(v)
}

func exampleValue(root schemaObj, name string, p schemaObj) any {
	if d, ok := p["default"]; ok {
		return d
	}
	if vals := enumValues(p); len(vals) > 0 {
		return vals[0]
	}
	if ex, ok := p["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	ts := types(root, p)
	t := "string"
	if len(ts) > 0 {
		t = ts[0]
	}
	switch t {
	case "integer", "number":
		if lo, ok := p["minimum"].(float64); ok {
			return lo
		}
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		items, _ := p["items"].(map[string]any)
		return []any{exampleValue(root, strings.TrimSuffix(name, "s"), resolve(root, items))}
	case "object":
		obj := map[string]any{}
		for _, c := range exampleParams(p) {
			obj[c.Name] = exampleValue(root, c.Name, c.Schema)
		}
		return obj
	}
	return strings.ToUpper(name)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
