package codemode

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.starlark.net/starlark"

	"github.com/nerve-dev/nerve/pkg/node"
)

// ToolName is the name of the meta-tool that runs a script.
const ToolName = "run_script"

// DefaultDescriptionBytes is how long run_script's description may grow
// with the visible tools' signatures: about 4,000 tokens, some 80 tools.
// Past it the description lists tool names only, then node names.
const DefaultDescriptionBytes = 16 << 10

// ToolOptions shape the run_script tool.
type ToolOptions struct {
	// Visible is the script's filter, as Options.Visible.
	Visible func(nodeID string, t *mcp.Tool) bool
	// MaxBytes bounds the description (0: DefaultDescriptionBytes).
	MaxBytes int
	// Describe and Search name the meta-tools that show one tool's
	// parameters and find tools (describe_tool, search_tools), pointed to
	// when the signatures do not fit; "" when the client has none.
	Describe, Search string
	// Limits are the limits runs will have, for the description.
	Limits Limits
}

// runScriptInput and runScriptOutput are run_script's schemas.
var (
	runScriptInput = json.RawMessage(`{"type":"object","properties":{"script":{"type":"string",` +
		`"description":"Starlark source. Its answer is the variable result (or the value of its last line)."}},` +
		`"required":["script"],"additionalProperties":false}`)
	runScriptOutput = json.RawMessage(`{"type":"object","properties":{` +
		`"result":{"description":"the script's result"},` +
		`"printed":{"type":"string","description":"what print() wrote"},` +
		`"calls":{"type":"integer"},"failed":{"type":"integer","description":"calls that returned an error value"},` +
		`"run":{"type":"string","description":"the run's id, the caller of its calls in the call log"},` +
		`"error":{"type":"object","properties":{"message":{"type":"string"},"line":{"type":"integer"},` +
		`"column":{"type":"integer"},"limit":{"type":"string"}}}}}`)
)

// Tool returns the run_script tool for the tools of ts that opts lets a
// script see: its description teaches the dialect and lists each tool as
// a Python-like signature generated from its schemas, with the first line
// of its description.
func Tool(ts *node.Toolset, opts *ToolOptions) *mcp.Tool {
	if opts == nil {
		opts = &ToolOptions{}
	}
	budget := opts.MaxBytes
	if budget <= 0 {
		budget = DefaultDescriptionBytes
	}
	lim := opts.Limits.withDefaults()
	binds := bind(ts, opts.Visible)
	example := `fs.read_text_file`
	if len(binds) > 0 {
		example = callName(binds[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, `Run a script that calls this session's tools as functions and answers with its result only: for a task of several tool calls, loops, or filtering large results, so that intermediate results never pass through your context.

The script is Starlark, a small Python dialect: def, if, for, while, comprehensions, lambda, string/list/dict methods, "%%s" %% x, "{}".format(x). No import, try/except, classes, f-strings or recursion.
- Call a tool as node.tool(name=value, ...), or by its name as tool("node.tool", name=value).
- A call returns the tool's structured content when its signature ends -> {...} or -> dict, else its text (a str; json.decode(text) reads JSON).
- A call that fails returns an error value: test it with is_error(r); r.error is the message. Using it as a value stops the script.
- parallel([(%s, {...}), (%s, {...})]) makes independent calls at once (%d at a time) and returns their results in order.
- The answer is the variable result (or the value of the last line, if it is an expression), and what print() wrote.
- Limits: %d tool calls, %s in all, %d steps, %s of values built.
`, example, example, lim.Parallel, lim.Calls, seconds(lim.Time), lim.Steps, node.HumanBytes(lim.Bytes))
	head := b.String()
	if len(binds) == 0 {
		return runScriptTool(head + "\nNo tools are visible to scripts now.")
	}
	sigs := make([]string, len(binds))
	total := len(head) + 40
	for i, bd := range binds {
		sigs[i] = signature(callName(bd), bd.entry.Tool) + oneLine(bd.entry.Tool.Description)
		total += len(sigs[i]) + 1
	}
	if total <= budget {
		return runScriptTool(head + "\nTools:\n" + strings.Join(sigs, "\n"))
	}
	// Too many for their signatures: names by node, then nodes only.
	var where []string
	if opts.Search != "" {
		where = append(where, opts.Search+" finds tools")
	}
	if opts.Describe != "" {
		where = append(where, opts.Describe+" shows a tool's parameters")
	}
	where = append(where, `describe("node.tool") in a script returns them`)
	head += fmt.Sprintf("\n%d tools are visible, too many to list with their parameters: %s.\n", len(binds), strings.Join(where, "; "))
	byNode, order := map[string][]string{}, []string(nil)
	for _, bd := range binds {
		n := bd.entry.Node
		if _, ok := byNode[n]; !ok {
			order = append(order, n)
		}
		byNode[n] = append(byNode[n], bd.entry.Tool.Name)
	}
	lines := make([]string, len(order))
	total = len(head)
	for i, n := range order {
		lines[i] = n + ": " + strings.Join(byNode[n], ", ")
		total += len(lines[i]) + 1
	}
	if total <= budget {
		return runScriptTool(head + "Tools by node:\n" + strings.Join(lines, "\n"))
	}
	b.Reset()
	b.WriteString(head + "Nodes:")
	for i, n := range order {
		item := fmt.Sprintf(" %s (%d tools)", n, len(byNode[n]))
		if i > 0 {
			item = "," + item
		}
		if b.Len()+len(item)+40 > budget {
			fmt.Fprintf(&b, " … and %d more nodes", len(order)-i)
			break
		}
		b.WriteString(item)
	}
	return runScriptTool(b.String())
}

func runScriptTool(desc string) *mcp.Tool {
	return &mcp.Tool{
		Name:         ToolName,
		Title:        "Run a script of tool calls",
		Description:  desc,
		InputSchema:  runScriptInput,
		OutputSchema: runScriptOutput,
	}
}

// binding is a visible tool and the names a script calls it by; node and
// tool are "" for one reached with tool("node.tool") only.
type binding struct {
	entry      node.ToolEntry
	node, tool string
}

// reserved are the names a node cannot take in a script: the builtins
// beside Starlark's universe, and result.
var reserved = map[string]bool{"json": true, "tool": true, "parallel": true, "is_error": true, "describe": true, "result": true}

// bind names the visible tools of ts as a script sees them: a node by its
// id and a tool by its name, each with every character outside
// [A-Za-z0-9_] read as '_'; an exact name wins over one read so, and a
// node named like a builtin is reached with tool() only.
func bind(ts *node.Toolset, visible func(string, *mcp.Tool) bool) []binding {
	var out []binding
	nodeOwner := map[string]string{}    // identifier → node id
	toolOwner := map[[2]string]string{} // node id, identifier → tool name
	for _, te := range ts.Tools() {
		if visible != nil && !visible(te.Node, te.Tool) {
			continue
		}
		out = append(out, binding{entry: te})
		id := identifier(te.Node)
		if id == "" || reserved[id] || starlark.Universe.Has(id) {
			continue
		}
		if cur, ok := nodeOwner[id]; !ok || cur != id && te.Node == id {
			nodeOwner[id] = te.Node
		}
		name := identifier(te.Tool.Name)
		if name == "" {
			continue
		}
		k := [2]string{te.Node, name}
		if cur, ok := toolOwner[k]; !ok || cur != name && te.Tool.Name == name {
			toolOwner[k] = te.Tool.Name
		}
	}
	for i := range out {
		te := out[i].entry
		id, name := identifier(te.Node), identifier(te.Tool.Name)
		if id != "" && nodeOwner[id] == te.Node && name != "" && toolOwner[[2]string{te.Node, name}] == te.Tool.Name {
			out[i].node, out[i].tool = id, name
		}
	}
	return out
}

// callName is how a script calls bd: fs.read_text_file, or
// tool("node.tool-name", …).
func callName(bd binding) string {
	if bd.node != "" {
		return bd.node + "." + bd.tool
	}
	return fmt.Sprintf("tool(%q)", bd.entry.Qualified)
}

// signature renders t called as call: `fs.read_text_file(path: str,
// head: int = None) -> str`; required parameters first, in the order the
// schema requires them, then the others by name. Parameters whose names
// are not identifiers are given as one dict: `x.y({"max-results": int})`.
func signature(call string, t *mcp.Tool) string {
	in := schemaMap(t.InputSchema)
	props, _ := in["properties"].(map[string]any)
	var names []string
	required := map[string]bool{}
	if req, ok := in["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok && !required[s] {
				if _, declared := props[s]; declared {
					names = append(names, s)
				}
				required[s] = true
			}
		}
	}
	var rest []string
	dict := false
	for name := range props {
		if !required[name] {
			rest = append(rest, name)
		}
		if identifier(name) != name {
			dict = true
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	params := make([]string, len(names))
	for i, name := range names {
		p, _ := props[name].(map[string]any)
		s := name
		if dict {
			s = strconv.Quote(name)
		}
		s += ": " + typeName(p)
		if !required[name] {
			s += " = " + defaultValue(p)
		}
		params[i] = s
	}
	list := strings.Join(params, ", ")
	if dict {
		list = "{" + list + "}"
	}
	open := call + "("
	if strings.HasSuffix(call, ")") { // tool("x.y"): the parameters follow the name
		open = strings.TrimSuffix(call, ")")
		if list != "" {
			open += ", "
		}
	}
	return open + list + ") -> " + returnType(t)
}

// describe is what describe(tool) returns: the signature, the whole
// description, and each parameter's own description.
func describe(call string, t *mcp.Tool) string {
	var b strings.Builder
	b.WriteString(signature(call, t))
	if d := strings.TrimSpace(t.Description); d != "" {
		b.WriteString("\n\n" + cut(d, 4<<10))
	}
	props, _ := schemaMap(t.InputSchema)["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k, p := range props {
		if m, _ := p.(map[string]any); m != nil {
			if d, _ := m["description"].(string); strings.TrimSpace(d) != "" {
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		b.WriteString("\n\nParameters:")
	}
	for _, k := range names {
		d := props[k].(map[string]any)["description"].(string)
		fmt.Fprintf(&b, "\n  %s: %s", k, cut(strings.TrimSpace(d), 300))
	}
	return b.String()
}

// describeCall is t's signature, for an error that shows how to call it.
func describeCall(call string, t *mcp.Tool) string { return signature(call, t) }

// soleParam is the parameter one positional argument stands for: the
// only required one, or the only one; "" when that is ambiguous.
func soleParam(t *mcp.Tool) string {
	in := schemaMap(t.InputSchema)
	if req, ok := in["required"].([]any); ok && len(req) == 1 {
		if s, ok := req[0].(string); ok {
			return s
		}
	}
	if props, ok := in["properties"].(map[string]any); ok && len(props) == 1 {
		for k := range props {
			return k
		}
	}
	return ""
}

// schemaMap returns a JSON schema, whatever Go type holds it, as a map.
func schemaMap(s any) map[string]any {
	switch s := s.(type) {
	case nil:
		return nil
	case map[string]any:
		return s
	case json.RawMessage:
		var m map[string]any
		_ = json.Unmarshal(s, &m)
		return m
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// typeName is a JSON schema as a Python type: str, int, list[str],
// "a" | "b", str | None, dict.
func typeName(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok && len(enum) > 0 && len(enum) <= 6 {
		vals := make([]string, len(enum))
		for i, v := range enum {
			vals[i] = literal(v)
		}
		return strings.Join(vals, " | ")
	}
	if c, ok := p["const"]; ok {
		return literal(c)
	}
	switch t := p["type"].(type) {
	case string:
		return pyType(t, p)
	case []any:
		var names []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				names = append(names, pyType(s, p))
			}
		}
		if len(names) > 0 {
			return strings.Join(names, " | ")
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := p[k].([]any); ok && len(alts) > 0 {
			var names []string
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					if n := typeName(m); !slices.Contains(names, n) {
						names = append(names, n)
					}
				}
			}
			return strings.Join(names, " | ")
		}
	}
	return "any"
}

func pyType(t string, p map[string]any) string {
	switch t {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "null":
		return "None"
	case "array":
		if items, ok := p["items"].(map[string]any); ok {
			if it := typeName(items); it != "any" {
				return "list[" + it + "]"
			}
		}
		return "list"
	case "object":
		return "dict"
	}
	return "any"
}

// literal is a JSON value as Python writes it.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case string:
		return strconv.Quote(v)
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > 40 {
		return "..."
	}
	return string(b)
}

func defaultValue(p map[string]any) string {
	if d, ok := p["default"]; ok {
		return literal(d)
	}
	return "None"
}

// returnType is what a call of t returns in a script: its output
// schema's properties, dict, or str.
func returnType(t *mcp.Tool) string {
	if t.OutputSchema == nil {
		return "str"
	}
	out := schemaMap(t.OutputSchema)
	props, _ := out["properties"].(map[string]any)
	if len(props) == 0 || len(props) > 8 {
		return "dict"
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		p, _ := props[k].(map[string]any)
		parts[i] = strconv.Quote(k) + ": " + typeName(p)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// oneLine is a tool description's first line as a trailing comment.
func oneLine(desc string) string {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return ""
	}
	if i := strings.IndexAny(desc, "\r\n"); i >= 0 {
		desc = strings.TrimSpace(desc[:i])
	}
	return "  # " + cut(desc, 120)
}

// cut shortens s to about n bytes at a space, with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = strings.ToValidUTF8(s[:n], "")
	if i := strings.LastIndexByte(s, ' '); i > n/2 {
		s = s[:i]
	}
	return s + "…"
}

// seconds is d as a model reads it: "60s", "0.5s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
