package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/argcheck"
	"github.com/nerve-dev/nerve/internal/suggest"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Per-tool overrides (issue 32, item 3). A node's spec keeps them by each
// tool's own name; the session applies them where it lists the node's
// tools (tools, the one tool cache), so every listing — Tools, Toolset,
// the MCP server, discovery, the Commander, llm nodes, graphs — shows the
// tool as overridden and every call by its shown name reaches the real
// tool with the fixed arguments merged in (call). A caller that gives a
// fixed or hidden argument is refused, not ignored: an agent that sends a
// value it was not shown should hear that it was not used.

// ToolOverride is pkg/api's: what an override changes of one tool.
type ToolOverride = api.ToolOverride

// ErrBadOverride: an override does not fit its tool (an unknown
// argument, a fixed value its schema refuses, a required argument hidden
// without a value, a name another tool has).
var ErrBadOverride = errors.New("the override does not fit the tool")

// toolView is what an override makes of a call: the tool's own name, the
// arguments every call gets, and those a caller may not give.
type toolView struct {
	real   string
	fixed  map[string]json.RawMessage
	banned []string // fixed and hidden, sorted
}

// refuse reports a caller's argument the override keeps for itself.
func (v *toolView) refuse(args json.RawMessage) error {
	if len(v.banned) == 0 || len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil // not an object: validation says so
	}
	for _, k := range v.banned {
		if _, ok := m[k]; ok {
			what := "hidden"
			if _, fixed := v.fixed[k]; fixed {
				what = "fixed"
			}
			return fmt.Errorf("%w: argument %q is %s by the session's override of this tool (`nerve tool override`): leave it out", node.ErrBadArgs, k, what)
		}
	}
	return nil
}

// request is req for the node: the tool's own name and the caller's
// arguments with the fixed ones merged in.
func (v *toolView) request(req *node.CallRequest) (*node.CallRequest, error) {
	r := *req
	r.Tool = v.real
	if len(v.fixed) == 0 {
		return &r, nil
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(req.Arguments)) > 0 {
		if err := json.Unmarshal(req.Arguments, &m); err != nil {
			return nil, fmt.Errorf("%w: arguments must be a JSON object: %v", node.ErrBadArgs, err)
		}
		if m == nil { // "null"
			m = map[string]json.RawMessage{}
		}
	}
	maps.Copy(m, v.fixed)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	r.Arguments = b
	return &r, nil
}

// overridesOf returns node e's overrides. The map is replaced, never
// changed, so the caller may read it without the lock.
func (s *Session) overridesOf(e *entry) map[string]ToolOverride {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return e.spec.Overrides
}

// view is node id's listing raw as the session shows it, with each tool
// of the cache. Without overrides it is raw itself. An override that no
// longer fits (a server that renamed its arguments, added a tool under the
// new name) is applied as far as it goes, and the rest is logged: a fixed
// argument is always merged in, so a server cannot shed it by changing
// its schema.
func (s *Session) view(id string, raw []*mcp.Tool, ovs map[string]ToolOverride) ([]*mcp.Tool, map[string]*cachedTool) {
	byName := make(map[string]*cachedTool, len(raw))
	if len(ovs) == 0 {
		for _, t := range raw {
			byName[t.Name] = &cachedTool{tool: t}
		}
		return raw, byName
	}
	count := make(map[string]int, len(raw))
	for _, t := range raw {
		count[shownName(t.Name, ovs)]++
	}
	out := make([]*mcp.Tool, 0, len(raw))
	for _, t := range raw {
		ov, ok := ovs[t.Name]
		if !ok {
			out = append(out, t)
			byName[t.Name] = &cachedTool{tool: t}
			continue
		}
		if ov.Name != "" && count[ov.Name] > 1 {
			s.log.Warn("an override's name is taken by another tool; the tool keeps its own",
				zap.String("node", id), zap.String("tool", t.Name), zap.String("name", ov.Name))
			ov.Name = ""
		}
		vt, v := applyOverride(t, ov)
		if _, dup := byName[vt.Name]; dup {
			continue
		}
		out = append(out, vt)
		byName[vt.Name] = &cachedTool{tool: vt, view: v}
	}
	return out, byName
}

// shownName is the name tool is listed under.
func shownName(tool string, ovs map[string]ToolOverride) string {
	if ov, ok := ovs[tool]; ok && ov.Name != "" {
		return ov.Name
	}
	return tool
}

// applyOverride returns t as ov shows it, and how a call of it is made.
func applyOverride(t *mcp.Tool, ov ToolOverride) (*mcp.Tool, *toolView) {
	c := *t
	if ov.Name != "" {
		c.Name = ov.Name
	}
	if ov.Description != "" {
		c.Description = ov.Description
	}
	if ov.Title != "" {
		c.Title = ov.Title
	}
	if ov.ReadOnly != nil || ov.Destructive != nil || ov.Idempotent != nil || ov.OpenWorld != nil ||
		ov.Title != "" && t.Annotations != nil && t.Annotations.Title != "" {
		var a mcp.ToolAnnotations
		if t.Annotations != nil {
			a = *t.Annotations
		}
		if ov.Title != "" && a.Title != "" {
			a.Title = ov.Title // clients fall back to it; keep both alike
		}
		if ov.ReadOnly != nil {
			a.ReadOnlyHint = *ov.ReadOnly
		}
		if ov.Destructive != nil {
			a.DestructiveHint = new(*ov.Destructive)
		}
		if ov.Idempotent != nil {
			a.IdempotentHint = *ov.Idempotent
		}
		if ov.OpenWorld != nil {
			a.OpenWorldHint = new(*ov.OpenWorld)
		}
		c.Annotations = &a
	}
	v := &toolView{real: t.Name, fixed: ov.Fixed}
	for k := range ov.Fixed {
		v.banned = append(v.banned, k)
	}
	for _, k := range ov.Hidden {
		if !slices.Contains(v.banned, k) {
			v.banned = append(v.banned, k)
		}
	}
	slices.Sort(v.banned)
	if len(v.banned) > 0 {
		c.InputSchema = withoutArgs(t.InputSchema, v.banned)
	}
	return &c, v
}

// withoutArgs returns schema without the properties named in drop, nor
// their place in "required". A schema that is not a JSON object is
// returned as it is.
func withoutArgs(schema any, drop []string) any {
	m, ok := schemaMap(schema)
	if !ok {
		return schema
	}
	out := maps.Clone(m)
	if props, ok := m["properties"].(map[string]any); ok {
		p := maps.Clone(props)
		for _, k := range drop {
			delete(p, k)
		}
		out["properties"] = p
	}
	if req, ok := m["required"].([]any); ok {
		out["required"] = slices.DeleteFunc(slices.Clone(req), func(r any) bool {
			s, _ := r.(string)
			return slices.Contains(drop, s)
		})
	}
	return out
}

// schemaMap is schema (whatever type a kind lists it as) as a JSON
// object.
func schemaMap(schema any) (map[string]any, bool) {
	if m, ok := schema.(map[string]any); ok {
		return m, true
	}
	if schema == nil {
		return nil, false
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// SetOverride changes the override of node id's tool, named by its own
// name or the name an override gave it. With merge, the fields ov sets
// are added to the tool's override (fixed and hidden arguments too);
// without, ov replaces it. A zero ov without merge clears it. The result
// must fit the tool's schema (checkOverride) unless it is cleared. The
// spec is saved, and every listing of the session sees the change (an
// EventTools). It returns the tool as the session now lists it, nil when
// the override was cleared and the node cannot list its tools.
func (s *Session) SetOverride(ctx context.Context, id, tool string, ov ToolOverride, merge bool) (*mcp.Tool, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	clear := !merge && ov.IsZero()
	var raw []*mcp.Tool
	if !clear || !isOverridden(tool, s.overridesOf(e)) {
		// Clearing needs no tool list: a node that is down can be
		// cleared of an override by either of the tool's names.
		if raw, err = s.rawTools(ctx, e); err != nil {
			return nil, fmt.Errorf("checking the override against node %q's tools: %w", id, err)
		}
	}
	s.mu.Lock()
	cur := e.spec.Overrides
	real, err := overrideKey(id, tool, raw, cur)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	next := cur[real].Clone()
	switch {
	case clear:
		next = ToolOverride{}
	case merge:
		mergeOverride(&next, ov)
	default:
		next = ov.Clone()
	}
	if !next.IsZero() {
		if err := checkOverride(id, raw, real, next, cur); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	all := maps.Clone(cur)
	if next.IsZero() {
		delete(all, real)
	} else {
		if all == nil {
			all = map[string]ToolOverride{}
		}
		all[real] = next
	}
	if len(all) == 0 {
		all = nil
	}
	if s.nodes[id] != e {
		s.mu.Unlock()
		return nil, fmt.Errorf("node %q changed while its override was set: %w; try again", id, ErrExists)
	}
	e.spec.Overrides = all
	s.mu.Unlock()
	s.invalidateTools(e)
	s.hub.publish(Event{Kind: EventTools, Node: id})
	if err := s.persist(); err != nil {
		return nil, fmt.Errorf("saving node %q's override: %w", id, err)
	}
	if raw == nil {
		return nil, nil
	}
	shown, _ := s.view(id, raw, all)
	name := shownName(real, all)
	for _, t := range shown {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, nil
}

// rawTools is node e's tools as the node lists them, without overrides.
func (s *Session) rawTools(ctx context.Context, e *entry) ([]*mcp.Tool, error) {
	if e.stopped.Load() {
		return nil, heldError(e.n.ID())
	}
	if err := s.await(ctx, e, false); err != nil {
		return nil, err
	}
	if st := e.n.State(); st != node.Ready && st != node.Busy && !catalogued(e.n) {
		return nil, node.NotReady(e.n.ID(), st, e.n.Info().Error)
	}
	return e.n.ListTools(ctx)
}

// isOverridden reports whether tool names an overridden tool, by its own
// name or its new one.
func isOverridden(tool string, cur map[string]ToolOverride) bool {
	_, err := overrideKey("", tool, nil, cur)
	return err == nil
}

// overrideKey is the own name of the tool named tool: its own name, or
// the name an override gave it. raw is nil when the override is being
// cleared and the node's tools were not read.
func overrideKey(id, tool string, raw []*mcp.Tool, cur map[string]ToolOverride) (string, error) {
	for k, ov := range cur {
		if ov.Name == tool {
			return k, nil
		}
	}
	if _, ok := cur[tool]; ok {
		return tool, nil
	}
	known := make([]string, 0, len(raw))
	for _, t := range raw {
		if t.Name == tool {
			return tool, nil
		}
		known = append(known, shownName(t.Name, cur))
	}
	return "", &UnknownToolError{Node: id, Tool: tool, Known: known}
}

// mergeOverride adds what add sets to o.
func mergeOverride(o *ToolOverride, add ToolOverride) {
	add = add.Clone()
	if add.Name != "" {
		o.Name = add.Name
	}
	if add.Title != "" {
		o.Title = add.Title
	}
	if add.Description != "" {
		o.Description = add.Description
	}
	for _, p := range []struct{ to, from **bool }{
		{&o.ReadOnly, &add.ReadOnly}, {&o.Destructive, &add.Destructive},
		{&o.Idempotent, &add.Idempotent}, {&o.OpenWorld, &add.OpenWorld},
	} {
		if *p.from != nil {
			*p.to = *p.from
		}
	}
	if len(add.Fixed) > 0 {
		if o.Fixed == nil {
			o.Fixed = map[string]json.RawMessage{}
		}
		maps.Copy(o.Fixed, add.Fixed)
	}
	for _, h := range add.Hidden {
		if !slices.Contains(o.Hidden, h) {
			o.Hidden = append(o.Hidden, h)
		}
	}
}

// maxToolName is the longest tool name MCP allows (2025-11-25, tool names).
const maxToolName = 128

// checkOverride says whether ov fits tool real of node id, whose tools
// are raw, beside the node's other overrides (cur): every problem in one
// error that wraps ErrBadOverride.
func checkOverride(id string, raw []*mcp.Tool, real string, ov ToolOverride, cur map[string]ToolOverride) error {
	var t *mcp.Tool
	for _, r := range raw {
		if r.Name == real {
			t = r
		}
	}
	if t == nil {
		names := make([]string, len(raw))
		for i, r := range raw {
			names[i] = r.Name
		}
		return &UnknownToolError{Node: id, Tool: real, Known: names}
	}
	var problems []string
	if ov.Name != "" && ov.Name != real {
		if p := badToolName(ov.Name); p != "" {
			problems = append(problems, p)
		}
		for _, r := range raw {
			if r.Name == real {
				continue
			}
			if shownName(r.Name, cur) == ov.Name {
				problems = append(problems, fmt.Sprintf("name %q is taken by another tool of node %s", ov.Name, id))
				break
			}
		}
	}
	m, _ := schemaMap(t.InputSchema)
	props, _ := m["properties"].(map[string]any)
	names := slices.Sorted(maps.Keys(props))
	var required []string
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required = append(required, s)
			}
		}
	}
	unknown := func(k string) string {
		p := fmt.Sprintf("%s has no argument %q", real, k)
		if len(names) == 0 {
			return p + " (it takes none)"
		}
		if c := suggest.Closest(k, names); c != "" {
			return p + fmt.Sprintf("; did you mean %q?", c)
		}
		return p + " (it takes " + strings.Join(names, ", ") + ")"
	}
	for _, k := range slices.Sorted(maps.Keys(ov.Fixed)) {
		if _, ok := props[k]; !ok {
			problems = append(problems, unknown(k))
			continue
		}
		if err := checkFixed(t, m, k, ov.Fixed[k]); err != nil {
			problems = append(problems, fmt.Sprintf("cannot fix %s to %s: %v", k, clip(string(ov.Fixed[k])), err))
		}
	}
	for _, k := range ov.Hidden {
		if _, ok := props[k]; !ok {
			problems = append(problems, unknown(k))
			continue
		}
		if _, fixed := ov.Fixed[k]; !fixed && slices.Contains(required, k) {
			problems = append(problems, fmt.Sprintf("cannot hide %s: %s requires it; fix its value instead (--fix %s=VALUE)", k, real, k))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: @%s %s: %s", ErrBadOverride, id, real, strings.Join(problems, "; "))
}

// badToolName says what is wrong with a tool name, or "".
func badToolName(name string) string {
	if len(name) > maxToolName {
		return fmt.Sprintf("name %q is longer than %d characters", clip(name), maxToolName)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Sprintf("name %q may hold only letters, digits, _, - and . (MCP's rule for tool names)", clip(name))
		}
	}
	return ""
}

// checkFixed validates value of argument k against its schema in t's
// input schema m: the whole schema, with "required" left out and only
// k given, so references and the schema's other rules apply as in a call.
func checkFixed(t *mcp.Tool, m map[string]any, k string, value json.RawMessage) error {
	s := maps.Clone(m)
	delete(s, "required")
	args, err := json.Marshal(map[string]json.RawMessage{k: value})
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	probe := *t
	probe.InputSchema = s
	err = argcheck.Validate(&probe, args)
	if err != nil {
		// argcheck's message starts with the sentinel's text; the
		// reason is what a person needs here.
		msg := strings.TrimPrefix(err.Error(), node.ErrBadArgs.Error()+": ")
		return errors.New(msg)
	}
	return nil
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
