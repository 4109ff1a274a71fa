package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
)

// elicitRequest is mcp.ElicitParams with the schema kept as sent, so the
// order of its properties survives where the wire kept it.
type elicitRequest struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
	ElicitationID   string          `json:"elicitationId"`
}

// formField is one property of an elicitation form (MCP allows only flat
// objects of strings, numbers, integers, booleans, enums and arrays of
// enums).
type formField struct {
	Name        string
	Title       string
	Description string
	Type        string // string, number, integer, boolean, array
	Format      string
	Required    bool
	Default     any // nil: none
	Choices     []choice
	Multi       bool // an array of choices
	Min, Max    *float64
	MinLen      *int
	MaxLen      *int
	MinItems    *int
	MaxItems    *int
}

// choice is one value of an enum and what the person sees for it.
type choice struct {
	Value string
	Title string
}

// fieldSchema is the part of a JSON schema a form field may use.
type fieldSchema struct {
	Type        json.RawMessage `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	Default     json.RawMessage `json:"default"`
	Enum        []any           `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []constTitle    `json:"oneOf"`
	AnyOf       []constTitle    `json:"anyOf"`
	Items       *fieldSchema    `json:"items"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
}

type constTitle struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// typeName is the schema's type: the first non-null one of a list.
func (s *fieldSchema) typeName() string {
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one
	}
	var many []string
	_ = json.Unmarshal(s.Type, &many)
	for _, t := range many {
		if t != "null" {
			return t
		}
	}
	return ""
}

func (s *fieldSchema) choices() []choice {
	var out []choice
	for i, v := range s.Enum {
		c := choice{Value: fmt.Sprint(v)}
		if i < len(s.EnumNames) {
			c.Title = s.EnumNames[i]
		}
		out = append(out, c)
	}
	for _, list := range [][]constTitle{s.OneOf, s.AnyOf} {
		for _, ct := range list {
			if ct.Const != nil {
				out = append(out, choice{Value: fmt.Sprint(ct.Const), Title: ct.Title})
			}
		}
	}
	return out
}

// parseForm reads a requested schema into its fields: the required ones
// first, each group in the order the schema lists them.
func parseForm(raw json.RawMessage) ([]*formField, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var top struct {
		Properties map[string]*fieldSchema `json:"properties"`
		Required   []string                `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("reading the form's schema: %w", err)
	}
	order, err := propertyOrder(raw)
	if err != nil {
		return nil, err
	}
	var fields []*formField
	for _, name := range order {
		s := top.Properties[name]
		if s == nil {
			continue
		}
		f := &formField{Name: name, Title: s.Title, Description: s.Description, Type: s.typeName(), Format: s.Format,
			Required: slices.Contains(top.Required, name), Min: s.Minimum, Max: s.Maximum,
			MinLen: s.MinLength, MaxLen: s.MaxLength, MinItems: s.MinItems, MaxItems: s.MaxItems}
		f.Choices = s.choices()
		if f.Type == "array" && s.Items != nil {
			f.Multi, f.Choices = true, s.Items.choices()
		}
		if f.Type == "" && len(f.Choices) > 0 {
			f.Type = "string"
		}
		switch f.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if len(f.Choices) == 0 {
				return nil, fmt.Errorf("field %q is a list without choices, which a form cannot ask", name)
			}
		default:
			return nil, fmt.Errorf("field %q has type %q, which a form cannot ask", name, f.Type)
		}
		if len(s.Default) > 0 && string(s.Default) != "null" {
			if err := json.Unmarshal(s.Default, &f.Default); err != nil {
				return nil, fmt.Errorf("field %q: default: %w", name, err)
			}
		}
		fields = append(fields, f)
	}
	slices.SortStableFunc(fields, func(a, b *formField) int {
		switch {
		case a.Required == b.Required:
			return 0
		case a.Required:
			return -1
		}
		return 1
	})
	return fields, nil
}

// propertyOrder returns the keys of raw's "properties" as written.
func propertyOrder(raw json.RawMessage) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("reading the form's schema: %w", err)
	}
	props, ok := top["properties"]
	if !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("reading the form's schema: properties is not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("reading the form's schema: %w", err)
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("reading the form's schema: %w", err)
		}
	}
	return keys, nil
}

// label is the field's title or name, with the name when both differ.
func (f *formField) label() string {
	if f.Title != "" && f.Title != f.Name {
		return f.Name + " — " + f.Title
	}
	return f.Name
}

// kindText says what the field takes, for its heading.
func (f *formField) kindText() string {
	switch {
	case f.Multi:
		s := "one or more of the numbers, separated by commas"
		if f.MinItems != nil && f.MaxItems != nil {
			s = fmt.Sprintf("%d to %d of the numbers, separated by commas", *f.MinItems, *f.MaxItems)
		}
		return s
	case len(f.Choices) > 0:
		return "a number or a value"
	case f.Type == "boolean":
		return "y or n"
	case f.Type == "integer", f.Type == "number":
		s := map[string]string{"integer": "a whole number", "number": "a number"}[f.Type]
		if f.Min != nil && f.Max != nil {
			s += fmt.Sprintf(" from %g to %g", *f.Min, *f.Max)
		} else if f.Min != nil {
			s += fmt.Sprintf(" ≥ %g", *f.Min)
		} else if f.Max != nil {
			s += fmt.Sprintf(" ≤ %g", *f.Max)
		}
		return s
	}
	if f.Format != "" {
		return "text (" + f.Format + ")"
	}
	return "text"
}

// renderField is the heading shown before a field is asked.
func renderField(st *commander.Style, f *formField, n, of int) string {
	var b strings.Builder
	req := "optional"
	if f.Required {
		req = "required"
	}
	fmt.Fprintf(&b, "  %s %s %s\n", paint(st, st.Dim, fmt.Sprintf("(%d/%d)", n, of)), paint(st, st.Bold, f.label()),
		paint(st, st.Dim, "· "+req+" · "+f.kindText()))
	if f.Description != "" {
		fmt.Fprintf(&b, "        %s\n", f.Description)
	}
	if len(f.Choices) > 0 {
		var cs []string
		for i, c := range f.Choices {
			s := fmt.Sprintf("%d) %s", i+1, c.Value)
			if c.Title != "" && c.Title != c.Value {
				s = fmt.Sprintf("%d) %s (%s)", i+1, c.Title, c.Value)
			}
			cs = append(cs, s)
		}
		fmt.Fprintf(&b, "        %s\n", strings.Join(cs, "  "))
	}
	if f.Default != nil {
		fmt.Fprintf(&b, "        %s\n", paint(st, st.Dim, "Enter keeps the default: "+f.shown(f.Default)))
	} else if !f.Required {
		fmt.Fprintf(&b, "        %s\n", paint(st, st.Dim, "Enter leaves it out"))
	}
	return b.String()
}

// shown is v as the person sees it: with its title when it is a choice.
func (f *formField) shown(v any) string {
	if list, ok := v.([]any); ok {
		var parts []string
		for _, e := range list {
			parts = append(parts, f.shown(e))
		}
		return strings.Join(parts, ", ")
	}
	for _, c := range f.Choices {
		if c.Value == fmt.Sprint(v) && c.Title != "" && c.Title != c.Value {
			return c.Title + " (" + c.Value + ")"
		}
	}
	return formatValue(v)
}

// errSkip is an empty answer to an optional field without a default.
var errSkip = errors.New("left out")

// parse turns the person's answer into the field's value: Enter keeps the
// default (or leaves out an optional field); choices are numbers, values
// or titles; the error says what to type instead.
func (f *formField) parse(in string) (any, error) {
	in = strings.TrimSpace(in)
	if in == "" {
		switch {
		case f.Default != nil:
			return f.Default, nil
		case f.Required:
			return nil, errors.New("this field is required")
		}
		return nil, errSkip
	}
	if f.Multi {
		var out []any
		for _, part := range strings.Split(in, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			v, err := f.pick(part)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		if f.MinItems != nil && len(out) < *f.MinItems {
			return nil, fmt.Errorf("choose at least %d", *f.MinItems)
		}
		if f.MaxItems != nil && len(out) > *f.MaxItems {
			return nil, fmt.Errorf("choose at most %d", *f.MaxItems)
		}
		return out, nil
	}
	if len(f.Choices) > 0 {
		return f.pick(in)
	}
	switch f.Type {
	case "boolean":
		switch strings.ToLower(in) {
		case "y", "yes", "true", "1", "on":
			return true, nil
		case "n", "no", "false", "0", "off":
			return false, nil
		}
		return nil, errors.New("type y or n")
	case "integer", "number":
		v, err := strconv.ParseFloat(in, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%q is not a number", in)
		}
		if f.Type == "integer" && v != math.Trunc(v) {
			return nil, fmt.Errorf("%q is not a whole number", in)
		}
		if f.Min != nil && v < *f.Min {
			return nil, fmt.Errorf("%s is below the minimum %g", in, *f.Min)
		}
		if f.Max != nil && v > *f.Max {
			return nil, fmt.Errorf("%s is above the maximum %g", in, *f.Max)
		}
		if f.Type == "integer" {
			return int64(v), nil
		}
		return v, nil
	}
	n := len([]rune(in))
	if f.MinLen != nil && n < *f.MinLen {
		return nil, fmt.Errorf("type at least %d characters", *f.MinLen)
	}
	if f.MaxLen != nil && n > *f.MaxLen {
		return nil, fmt.Errorf("type at most %d characters", *f.MaxLen)
	}
	if err := checkFormat(f.Format, in); err != nil {
		return nil, err
	}
	return in, nil
}

// pick finds one choice by number, value or title.
func (f *formField) pick(in string) (any, error) {
	if i, err := strconv.Atoi(in); err == nil && i >= 1 && i <= len(f.Choices) {
		return f.Choices[i-1].Value, nil
	}
	for _, c := range f.Choices {
		if in == c.Value || strings.EqualFold(in, c.Title) || strings.EqualFold(in, c.Value) {
			return c.Value, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of the choices: type a number from 1 to %d", in, len(f.Choices))
}

// checkFormat checks the string formats MCP forms may ask for.
func checkFormat(format, s string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return fmt.Errorf("%q is not an email address (like ada@example.com)", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("%q is not a URL (like https://example.com)", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("%q is not a date: type YYYY-MM-DD", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("%q is not a date and time: type like 2026-01-31T09:30:00Z", s)
		}
	}
	return nil
}

// formatValue shows a value as the person typed or chose it.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, formatValue(e))
		}
		return strings.Join(parts, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// renderAnswers shows the whole answer before it is sent.
func renderAnswers(st *commander.Style, node string, fields []*formField, values map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s\n", paint(st, st.Dim, fmt.Sprintf("Your answer to @%s:", node)))
	w := 0
	for _, f := range fields {
		w = max(w, len(f.Name))
	}
	for i, f := range fields {
		v, ok := values[f.Name]
		shown := paint(st, st.Dim, "(left out)")
		if ok {
			shown = f.shown(v)
		}
		fmt.Fprintf(&b, "  %2d) %-*s  %s\n", i+1, w, f.Name, shown)
	}
	return b.String()
}

// elicitAccept is the result of a submitted form.
func elicitAccept(values map[string]any) *mcp.ElicitResult {
	content := map[string]any{}
	for k, v := range values {
		content[k] = v
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

func elicitDecline() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }
func elicitCancel() *mcp.ElicitResult  { return &mcp.ElicitResult{Action: "cancel"} }

// answerElicit runs the elicitation dialog: a form field by field, or the
// consent to open a URL.
func (r *repl) answerElicit(_ context.Context, q *ask) askAnswer {
	if a := approvalOf(q.params); a != nil {
		return r.answerApproval(q, a) // approve.go
	}
	var p elicitRequest
	if err := json.Unmarshal(q.params, &p); err != nil {
		r.printErr(fmt.Errorf("@%s sent an elicitation request nerve cannot read: %w (declined)", q.node, err))
		return askAnswer{result: elicitDecline()}
	}
	st := r.style
	if p.Mode == "url" || p.Mode == "" && p.URL != "" {
		return r.answerURL(q, &p) // elicit_url.go
	}
	fmt.Fprintf(r.out, "%s\n", paint(st, st.Bold+st.Yellow, fmt.Sprintf("? @%s asks you:", q.node)))
	if p.Message != "" {
		fmt.Fprintf(r.out, "  %s\n", indentRest(p.Message, "  "))
	}
	done := func(res *mcp.ElicitResult) askAnswer {
		if q.withdrawn() != nil {
			return askAnswer{result: res} // answerAsk says why; nothing is sent
		}
		what := map[string]string{"accept": "sent", "decline": "declined", "cancel": "cancelled"}[res.Action]
		fmt.Fprintln(r.out, paint(st, st.Dim, fmt.Sprintf("  → %s; @%s is told so", what, q.node)))
		return askAnswer{result: res}
	}
	refused := func(err error) askAnswer {
		if errors.Is(err, errCancel) {
			return done(elicitCancel())
		}
		if !errors.Is(err, errDeclined) && q.withdrawn() == nil {
			r.printErr(err)
		}
		return done(elicitDecline())
	}
	fields, err := parseForm(p.RequestedSchema)
	if err != nil {
		r.printErr(fmt.Errorf("@%s asked with a form nerve cannot show: %w (declined)", q.node, err))
		return done(elicitDecline())
	}
	fmt.Fprintln(r.out, paint(st, st.Dim, fmt.Sprintf("  %d field(s); Ctrl-C declines, Ctrl-D cancels.", len(fields))))
	values := map[string]any{}
	for i, f := range fields {
		if err := r.askField(f, i+1, len(fields), values); err != nil {
			return refused(err)
		}
	}
	for {
		fmt.Fprint(r.out, renderAnswers(st, q.node, fields, values))
		fmt.Fprintln(r.out, "  [s]ubmit  [e]dit a field  [d]ecline  [c]ancel")
		c, err := r.choose("elicit> ", "sedc", "")
		if err != nil {
			return refused(err)
		}
		switch c {
		case "s":
			return done(elicitAccept(values))
		case "d":
			return done(elicitDecline())
		case "c":
			return done(elicitCancel())
		case "e":
			f, err := r.pickField(fields)
			if err != nil {
				return refused(err)
			}
			if err := r.askField(f, slices.Index(fields, f)+1, len(fields), values); err != nil {
				return refused(err)
			}
		}
	}
}

// askField asks one field until the answer is valid and stores it in
// values (or removes it when left out).
func (r *repl) askField(f *formField, n, of int, values map[string]any) error {
	if v, ok := values[f.Name]; ok {
		// Editing: the current answer is what Enter keeps.
		g := *f
		g.Default = v
		f = &g
	}
	fmt.Fprint(r.out, renderField(r.style, f, n, of))
	for {
		line, err := r.askLine(f.Name+"> ", "")
		if err != nil {
			return err
		}
		v, err := f.parse(line)
		switch {
		case errors.Is(err, errSkip):
			delete(values, f.Name)
			return nil
		case err != nil:
			fmt.Fprintln(r.errOut, paint(r.style, r.style.Red, "  "+err.Error()))
			continue
		}
		values[f.Name] = v
		return nil
	}
}

// pickField asks which field to edit, by number or name.
func (r *repl) pickField(fields []*formField) (*formField, error) {
	for {
		line, err := r.askLine("field> ", "")
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if i, err := strconv.Atoi(line); err == nil && i >= 1 && i <= len(fields) {
			return fields[i-1], nil
		}
		for _, f := range fields {
			if f.Name == line {
				return f, nil
			}
		}
		fmt.Fprintf(r.errOut, "  type a field's number (1 to %d) or name\n", len(fields))
	}
}
