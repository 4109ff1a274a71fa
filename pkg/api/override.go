package api

import "encoding/json"

// ToolOverride changes how a session shows and calls one tool of a node
// (issue 32): a node's spec keeps them by the tool's own name
// (Spec.Overrides), and the session applies them to its tool list, so
// every client — MCP clients, the Commander, llm nodes, graphs — sees the
// tool as overridden and calls it by its new name. Set with PUT
// …/nodes/{node}/tools/{tool}/override (`nerve tool override`), which
// refuses an override that does not fit the tool's schema.
type ToolOverride struct {
	// Name replaces the tool's name (unique among the node's tools).
	Name string `json:"name,omitempty"`
	// Title and Description replace the tool's.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// The annotations' hints, each left as the server sent it when nil.
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
	// Fixed are arguments every call gets, by name: they leave the
	// schema, and a call that gives one is refused.
	Fixed map[string]json.RawMessage `json:"fixed,omitempty"`
	// Hidden are arguments that leave the schema without a value (the
	// server's default applies); a call that gives one is refused. A
	// required argument can only be hidden by fixing it.
	Hidden []string `json:"hidden,omitempty"`
}

// IsZero reports whether o changes nothing.
func (o *ToolOverride) IsZero() bool {
	return o == nil || o.Name == "" && o.Title == "" && o.Description == "" &&
		o.ReadOnly == nil && o.Destructive == nil && o.Idempotent == nil && o.OpenWorld == nil &&
		len(o.Fixed) == 0 && len(o.Hidden) == 0
}

// Clone returns a deep copy of o.
func (o ToolOverride) Clone() ToolOverride {
	c := o
	for _, p := range []**bool{&c.ReadOnly, &c.Destructive, &c.Idempotent, &c.OpenWorld} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	if o.Fixed != nil {
		c.Fixed = make(map[string]json.RawMessage, len(o.Fixed))
		for k, v := range o.Fixed {
			c.Fixed[k] = append(json.RawMessage(nil), v...)
		}
	}
	c.Hidden = append([]string(nil), o.Hidden...)
	return c
}

// OverrideResponse answers PUT and DELETE …/tools/{tool}/override: the
// tool as the session now lists it (an MCP tool as JSON), absent when the
// node cannot list it now.
type OverrideResponse struct {
	Tool json.RawMessage `json:"tool,omitempty"`
}
