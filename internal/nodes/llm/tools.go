package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/node"
)

// toolCache keeps the tools offered for one Toolset, which the session
// keeps (and gives back as the same pointer) until a node or a tool list
// changes, so schemas are cleaned once per change rather than per step.
type toolCache struct {
	ts    *node.Toolset
	tools []provider.Tool
	byLLM map[string]node.ToolEntry
	bytes int // size of the tools' JSON, for the token budget
	// In discovery mode (Options.Discover, discover set) tools holds
	// search_tools and call_tool, byLLM is empty, and the chosen tools
	// are found through the session's searcher (or, on a session without
	// one, index) and called by byName (qualified and LLM names).
	discover bool
	searcher searcher
	index    *toolsearch.Index
	byName   map[string]node.ToolEntry
	// code says run_script is offered (Options.Code, code.go): instead
	// of the tools, or beside the discovery tools.
	code bool
}

// offered returns the tools the model may call now, by LLM name.
func (n *Node) offered(ctx context.Context) toolCache {
	if len(n.opts.Tools) == 0 || n.env.Tools == nil {
		return toolCache{}
	}
	ts := n.env.Tools.Toolset(ctx)
	n.mu.Lock()
	if n.toolCache.ts == ts && ts != nil {
		c := n.toolCache
		n.mu.Unlock()
		return c
	}
	n.mu.Unlock()
	c := toolCache{ts: ts, byLLM: map[string]node.ToolEntry{}}
	if n.opts.Discover || n.opts.Code {
		if n.opts.Discover {
			c = discoveryCache(ts, n.env.Tools, n.ID(), n.opts.Tools)
		}
		if n.opts.Code {
			c = n.codeCache(c)
		}
		n.mu.Lock()
		n.toolCache = c
		n.mu.Unlock()
		return c
	}
	for _, e := range ts.Tools() {
		if e.Node == n.ID() || !selected(n.opts.Tools, e) {
			continue
		}
		desc := e.Tool.Description
		if desc == "" {
			desc = e.Tool.Title
		}
		t := provider.Tool{Name: e.LLMName, Description: desc, Parameters: CleanSchema(e.Tool.InputSchema)}
		c.tools = append(c.tools, t)
		c.byLLM[e.LLMName] = e
		b, _ := json.Marshal(t.Parameters)
		c.bytes += len(b) + len(t.Name) + len(t.Description) + 32
	}
	n.mu.Lock()
	n.toolCache = c
	n.mu.Unlock()
	return c
}

// selected reports whether one of patterns chooses the tool: "*", a node
// id (or a glob over ids, without a dot), or a glob over qualified names
// (with a dot).
func selected(patterns []string, e node.ToolEntry) bool {
	for _, p := range patterns {
		target := e.Node
		if strings.Contains(p, ".") {
			target = e.Qualified
		}
		if ok, _ := path.Match(p, target); ok {
			return true
		}
	}
	return false
}

// dropped are keywords providers reject or choke on that carry no meaning
// for validation: OpenAI's strict validator, Gemini's OpenAI-compatible
// endpoint and llama.cpp's grammar builder each refuse some of them.
var dropped = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true,
	"$dynamicAnchor": true, "$vocabulary": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"contentMediaType": true, "contentEncoding": true, "contentSchema": true,
}

// Keywords whose value is a schema, a map of schemas or a list of schemas.
var (
	schemaKeys    = []string{"not", "additionalProperties", "additionalItems", "contains", "propertyNames", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "items"}
	schemaMapKeys = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaListKey = []string{"anyOf", "oneOf", "allOf", "prefixItems", "items"}
)

// CleanSchema returns a copy of a tool's input schema that providers
// accept, keeping its meaning where it can:
//   - $schema, $id, $comment, examples, deprecated, readOnly, writeOnly and
//     the content* keywords are dropped (they do not constrain values);
//   - exclusiveMinimum/exclusiveMaximum (rejected by several providers)
//     become minimum/maximum plus a note in the description ("must be > 0"),
//     so the model still knows the bound is strict (nerve checks the real
//     schema before any call);
//   - const becomes a one-value enum;
//   - oneOf/anyOf/allOf at the top level (Anthropic refuses them there:
//     "input_schema does not support oneOf, allOf, or anyOf at the top
//     level") are flattened: their branches' properties join the top
//     level's, allOf's required lists too, and the alternatives of
//     oneOf/anyOf are said in the description;
//   - the top level is always {"type":"object","properties":{…}}.
//
// The original is never modified.
func CleanSchema(schema any) map[string]any {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = s
	case nil:
	default:
		// *jsonschema.Schema, json.RawMessage, …: go through JSON.
		b, err := json.Marshal(s)
		if err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	out, _ := cleanSchema(m).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	flattenTopLevel(out)
	if t, _ := out["type"].(string); t != "object" {
		out["type"] = "object"
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	return out
}

func cleanSchema(v any) any {
	switch s := v.(type) {
	case bool:
		if s {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	case map[string]any:
		return cleanObject(s)
	default:
		return v
	}
}

func cleanObject(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	var notes []string
	for k, v := range s {
		if dropped[k] {
			continue
		}
		out[k] = v
	}
	for _, k := range schemaKeys {
		if v, ok := out[k]; ok {
			if _, isList := v.([]any); !isList {
				out[k] = cleanSchema(v)
			}
		}
	}
	for _, k := range schemaListKey {
		if list, ok := out[k].([]any); ok {
			c := make([]any, len(list))
			for i, e := range list {
				c[i] = cleanSchema(e)
			}
			out[k] = c
		}
	}
	for _, k := range schemaMapKeys {
		if m, ok := out[k].(map[string]any); ok {
			c := make(map[string]any, len(m))
			for name, e := range m {
				c[name] = cleanSchema(e)
			}
			out[k] = c
		}
	}
	for _, b := range []struct{ excl, incl, op string }{{"exclusiveMinimum", "minimum", ">"}, {"exclusiveMaximum", "maximum", "<"}} {
		v, ok := out[b.excl]
		if !ok {
			continue
		}
		delete(out, b.excl)
		switch x := v.(type) {
		case bool: // draft 4: a flag on minimum/maximum
			if x {
				if lim, ok := out[b.incl]; ok {
					notes = append(notes, fmt.Sprintf("must be %s %v", b.op, lim))
				}
			}
		default:
			if _, has := out[b.incl]; !has {
				out[b.incl] = x
			}
			notes = append(notes, fmt.Sprintf("must be %s %v", b.op, x))
		}
	}
	if c, ok := out["const"]; ok {
		delete(out, "const")
		if _, has := out["enum"]; !has {
			out["enum"] = []any{c}
		}
	}
	if len(notes) > 0 {
		d, _ := out["description"].(string)
		note := "(" + strings.Join(notes, ", ") + ")"
		if d != "" {
			d += " "
		}
		out["description"] = d + note
	}
	return out
}

// flattenTopLevel removes oneOf, anyOf and allOf from the top level of a
// cleaned schema, keeping what the model needs: every property any branch
// names, the properties every allOf branch requires, and, for oneOf/anyOf,
// a note listing the alternatives by their required properties
// ("give one of: {path} or {url, method}"). nerve still validates the
// arguments against the tool's real schema.
func flattenTopLevel(s map[string]any) {
	props, _ := s["properties"].(map[string]any)
	// A copy: the slice is still the tool's own.
	required, _ := s["required"].([]any)
	required = slices.Clone(required)
	var notes []string
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		branches, ok := s[k].([]any)
		if !ok {
			if _, present := s[k]; present {
				delete(s, k)
			}
			continue
		}
		delete(s, k)
		var alts []string
		for _, br := range branches {
			b, ok := br.(map[string]any)
			if !ok {
				continue
			}
			if bp, ok := b["properties"].(map[string]any); ok {
				if props == nil {
					props = map[string]any{}
				}
				for name, p := range bp {
					if _, has := props[name]; !has {
						props[name] = p
					}
				}
			}
			req, _ := b["required"].([]any)
			if k == "allOf" {
				for _, r := range req {
					if !slices.Contains(required, r) {
						required = append(required, r)
					}
				}
				continue
			}
			names := make([]string, 0, len(req))
			for _, r := range req {
				names = append(names, fmt.Sprint(r))
			}
			if len(names) > 0 {
				alts = append(alts, "{"+strings.Join(names, ", ")+"}")
			}
		}
		if len(alts) > 1 {
			what := "one or more"
			if k == "oneOf" {
				what = "exactly one"
			}
			notes = append(notes, fmt.Sprintf("give %s of: %s", what, strings.Join(alts, " or ")))
		}
	}
	if props != nil {
		s["properties"] = props
	}
	if len(required) > 0 {
		s["required"] = required
	}
	if len(notes) > 0 {
		d, _ := s["description"].(string)
		if d != "" {
			d += " "
		}
		s["description"] = d + "(" + strings.Join(notes, "; ") + ")"
	}
}
