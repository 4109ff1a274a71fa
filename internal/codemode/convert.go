package codemode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
)

// Values cross between a script and its tools as JSON data: arguments go
// out as JSON, structured results come in as the Go values the MCP SDK
// decoded them into, and json.decode reads text. Every conversion is
// bounded in depth (maxDepth) and charged to the run's limits as it
// builds, so a tool's 20 MB answer or a script's cyclic list stops with a
// limit's error, never a daemon's crash.

// toJSON returns v as JSON data (nil, bool, int64, json.Number, float64,
// string, []any, map[string]any); what names v in errors ("the
// arguments of fs.read_text_file").
func (r *run) toJSON(v starlark.Value, what string) (any, error) {
	c := jsonOut{r: r}
	out, err := c.value(v, 0)
	if werr := r.walk(c.visited, what); werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

type jsonOut struct {
	r       *run
	visited int
}

func (c *jsonOut) value(v starlark.Value, depth int) (any, error) {
	c.visited++
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels deep (a list that holds itself?)", maxDepth)
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if n, ok := v.Int64(); ok {
			return n, nil
		}
		return json.Number(v.String()), nil
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("JSON has no %s", v)
		}
		return f, nil
	case starlark.String:
		return string(v), nil
	case starlark.Bytes:
		return string(v), nil
	case *starlark.List:
		return c.list(v, v.Len(), depth)
	case starlark.Tuple:
		return c.list(v, len(v), depth)
	case *starlark.Set:
		return c.list(v, v.Len(), depth)
	case *starlark.Dict:
		m := make(map[string]any, v.Len())
		for _, kv := range v.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("a dict key must be a string to become JSON, not %s (%s)", kv[0].Type(), shortRepr(kv[0]))
			}
			x, err := c.value(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			m[string(k)] = x
		}
		return m, nil
	case *toolError:
		return map[string]any{"error": v.msg, "tool": v.tool}, nil
	}
	return nil, fmt.Errorf("a %s cannot become JSON: only None, bools, numbers, strings, lists, tuples and dicts can", v.Type())
}

func (c *jsonOut) list(v starlark.Iterable, n, depth int) (any, error) {
	out := make([]any, 0, n)
	iter := v.Iterate()
	defer iter.Done()
	var e starlark.Value
	for iter.Next(&e) {
		x, err := c.value(e, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// encodeJSON is json.encode(x, indent=n): x as JSON text, charged.
func (r *run) encodeJSON(x starlark.Value, indent int) (string, error) {
	v, err := r.toJSON(x, "the value")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent > 0 {
		enc.SetIndent("", strings.Repeat(" ", indent))
	}
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err := r.charge(int64(len(out)), "json.encode()"); err != nil {
		return "", err
	}
	return string(out), nil
}

// decodeJSON is json.decode(s): JSON text as Starlark values (objects in
// the text's order), read token by token with encoding/json, so nothing
// recurses and each value is charged before the next is read.
func (r *run) decodeJSON(s string) (starlark.Value, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	type frame struct {
		list *starlark.List
		dict *starlark.Dict
		key  starlark.Value // the pending key of dict, nil when none
	}
	var stack []*frame
	var root starlark.Value
	tokens := 0
	// put adds v to the innermost container, or makes it the root.
	put := func(v starlark.Value) error {
		if len(stack) == 0 {
			root = v
			return nil
		}
		f := stack[len(stack)-1]
		if f.list != nil {
			return errors.Join(f.list.Append(v), r.charge(slotBytes, "json.decode()"))
		}
		if f.key == nil {
			f.key = v
			return nil
		}
		k := f.key
		f.key = nil
		return errors.Join(f.dict.SetKey(k, v), r.charge(entryBytes, "json.decode()"))
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 || root == nil {
				return nil, errors.New("the JSON text ends too soon")
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if root != nil && len(stack) == 0 {
			return nil, errors.New("more than one JSON value in the text")
		}
		tokens++
		if tokens%1024 == 0 {
			if err := r.walk(1024, "json.decode()"); err != nil {
				return nil, err
			}
		}
		var v starlark.Value
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '[', '{':
				if len(stack) >= maxDepth {
					return nil, fmt.Errorf("JSON nested more than %d levels deep", maxDepth)
				}
				f := &frame{}
				if t == '[' {
					f.list = starlark.NewList(nil)
					v = f.list
				} else {
					f.dict = starlark.NewDict(0)
					v = f.dict
				}
				if err := r.charge(shallow(v), "json.decode()"); err != nil {
					return nil, err
				}
				if err := put(v); err != nil {
					return nil, err
				}
				stack = append(stack, f)
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case nil:
			v = starlark.None
		case bool:
			v = starlark.Bool(t)
		case json.Number:
			if v, err = number(string(t)); err != nil {
				return nil, err
			}
		case string:
			if err := r.charge(int64(len(t))+16, "json.decode()"); err != nil {
				return nil, err
			}
			v = starlark.String(t)
		}
		if err := put(v); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// number is a JSON number as an int when it has no fraction or exponent,
// else a float.
func number(s string) (starlark.Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return starlark.MakeInt64(n), nil
		}
		if len(s) <= maxIntDigits {
			if b, ok := new(big.Int).SetString(s, 10); ok {
				return starlark.MakeBigInt(b), nil
			}
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("number %q: %w", s, err)
	}
	return starlark.Float(f), nil
}

// fromGo returns JSON data as the MCP SDK decoded it (map[string]any,
// []any, float64, …) as Starlark values, charged; anything else (a
// node's own Go type, json.RawMessage) goes through its JSON text.
func (r *run) fromGo(x any) (starlark.Value, error) {
	c := jsonIn{r: r}
	v, err := c.value(x, 0)
	if werr := r.walk(c.visited, "reading a tool's result"); werr != nil {
		return nil, werr
	}
	return v, err
}

type jsonIn struct {
	r       *run
	visited int
}

func (c *jsonIn) value(x any, depth int) (starlark.Value, error) {
	c.visited++
	if depth > maxDepth {
		return nil, fmt.Errorf("a result nested more than %d levels deep", maxDepth)
	}
	switch x := x.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return starlark.MakeInt64(int64(x)), nil
		}
		return starlark.Float(x), nil
	case json.Number:
		return number(string(x))
	case string:
		if err := c.r.charge(int64(len(x))+16, "a tool's result"); err != nil {
			return nil, err
		}
		return starlark.String(x), nil
	case []any:
		if err := c.r.charge(headerBytes+slotBytes*int64(len(x)), "a tool's result"); err != nil {
			return nil, err
		}
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = v
		}
		return starlark.NewList(elems), nil
	case map[string]any:
		if err := c.r.charge(tableBytes+entryBytes*int64(len(x)), "a tool's result"); err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := starlark.NewDict(len(x))
		for _, k := range keys {
			v, err := c.value(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), v); err != nil {
				return nil, err
			}
		}
		return d, nil
	case json.RawMessage:
		return c.r.decodeJSON(string(x))
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("a result of type %T cannot be read: %w", x, err)
	}
	return c.r.decodeJSON(string(b))
}
