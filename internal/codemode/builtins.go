package codemode

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// maxPrinted is how much of what a script prints is kept for its result.
const maxPrinted = 64 << 10

// builtins returns what a script has beside Starlark's universe: the
// guards, the universe's builtins that copy or walk wrapped so that they
// are charged first, print, json, and the tool helpers (tools.go).
func (r *run) builtins() starlark.StringDict {
	d := r.guards()
	// Builtins that make a container of one element per element of their
	// argument: charged the slots and the walk before they run.
	for name, per := range map[string]int64{
		"list": slotBytes, "tuple": slotBytes, "sorted": slotBytes, "reversed": slotBytes,
		"set": entryBytes, "dict": entryBytes, "enumerate": slotBytes + pairBytes,
	} {
		d[name] = r.wrap(name, func(args starlark.Tuple, kwargs []starlark.Tuple) error {
			n := len(kwargs)
			if len(args) > 0 {
				k, err := r.bound(args[0], name+"()")
				if err != nil {
					return err
				}
				n += k
			}
			return r.charge(per*int64(n), name+"()")
		})
	}
	d["zip"] = r.wrap("zip", func(args starlark.Tuple, _ []starlark.Tuple) error {
		n := -1
		for _, a := range args {
			k, err := r.bound(a, "zip()")
			if err != nil {
				return err
			}
			if n < 0 || k < n {
				n = k
			}
		}
		return r.charge(int64(max(n, 0))*(slotBytes*int64(len(args)+1)+24), "zip()")
	})
	// Builtins that only walk their argument.
	for _, name := range []string{"any", "all", "min", "max"} {
		d[name] = r.wrap(name, func(args starlark.Tuple, _ []starlark.Tuple) error {
			if len(args) == 1 {
				_, err := r.bound(args[0], name+"()")
				return err
			}
			return nil
		})
	}
	// Builtins that show values.
	d["str"] = r.wrap("str", func(args starlark.Tuple, _ []starlark.Tuple) error {
		if len(args) != 1 {
			return nil
		}
		if _, ok := args[0].(starlark.String); ok {
			return nil // str of a string is the string itself
		}
		return r.chargeShown(args, false, "str()")
	})
	d["repr"] = r.wrap("repr", func(args starlark.Tuple, _ []starlark.Tuple) error {
		return r.chargeShown(args, true, "repr()")
	})
	d["fail"] = r.wrap("fail", func(args starlark.Tuple, _ []starlark.Tuple) error {
		return r.chargeShown(args, false, "fail()")
	})
	d["print"] = r.wrap("print", func(args starlark.Tuple, kwargs []starlark.Tuple) error {
		for _, kv := range kwargs {
			if sep, ok := kv[1].(starlark.String); ok {
				if err := r.charge(satMul(int64(len(sep)), int64(len(args))), "print(sep=...)"); err != nil {
					return err
				}
			}
		}
		return r.chargeShown(args, false, "print()")
	})
	d["int"] = r.wrap("int", func(args starlark.Tuple, _ []starlark.Tuple) error {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok && len(s) > maxIntDigits {
				return fmt.Errorf("int() of a string of %d characters: a script's ints are read from at most %d digits", len(s), maxIntDigits)
			}
		}
		return nil
	})
	d["bytes"] = r.wrap("bytes", func(args starlark.Tuple, _ []starlark.Tuple) error {
		if len(args) != 1 {
			return nil
		}
		if s, ok := args[0].(starlark.String); ok {
			return r.charge(int64(len(s)), "bytes()")
		}
		n, err := r.bound(args[0], "bytes()")
		if err != nil {
			return err
		}
		return r.charge(int64(n), "bytes()")
	})
	d["getattr"] = starlark.NewBuiltin("getattr", r.getattr)
	d["json"] = r.jsonModule()
	r.toolBuiltins(d)
	return d
}

// wrap returns Starlark's builtin name with check run before it.
func (r *run) wrap(name string, check func(args starlark.Tuple, kwargs []starlark.Tuple) error) *starlark.Builtin {
	orig := starlark.Universe[name].(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := check(args, kwargs); err != nil {
			return nil, err
		}
		return orig.CallInternal(thread, args, kwargs)
	})
}

// chargeShown charges the text of args shown one after the other.
func (r *run) chargeShown(args starlark.Tuple, quoted bool, what string) error {
	var total int64
	for _, a := range args {
		n, err := r.textSize(a, quoted)
		if err != nil {
			return err
		}
		total = satAdd(total, n+1)
	}
	return r.charge(total, what)
}

// getattr is Starlark's getattr with the methods that copy wrapped, as
// x.name is (rewrite.go).
func (r *run) getattr(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, dflt starlark.Value
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &x, &name, &dflt); err != nil {
		return nil, err
	}
	v, err := r.attr(x, name)
	if err != nil && dflt != nil {
		return dflt, nil
	}
	return v, err
}

// print keeps what a script prints, up to maxPrinted bytes (print was
// charged by its wrapper).
func (r *run) print(_ *starlark.Thread, msg string) {
	if room := maxPrinted - r.printed.Len(); room > 0 {
		if len(msg) >= room {
			r.printed.WriteString(msg[:room])
			r.cut += int64(len(msg) + 1 - room)
			return
		}
		r.printed.WriteString(msg)
		r.printed.WriteByte('\n')
		return
	}
	r.cut += int64(len(msg) + 1)
}

func (r *run) printedText() string {
	if r.cut == 0 {
		return r.printed.String()
	}
	return strings.ToValidUTF8(r.printed.String(), "") + fmt.Sprintf("\n[... %d more bytes printed]\n", r.cut)
}

// jsonModule is json.encode / json.decode, and Python's names for them
// (json.dumps / json.loads), through convert.go: bounded in depth and
// charged as they build.
func (r *run) jsonModule() *starlarkstruct.Module {
	encode := func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		var indent starlark.Value = starlark.None
		if err := starlark.UnpackArgs(b.Name(), args, kwargs, "x", &x, "indent?", &indent); err != nil {
			return nil, err
		}
		n := 0
		if indent != starlark.None {
			k, err := starlark.AsInt32(indent)
			if err != nil {
				return nil, fmt.Errorf("%s: indent: %w", b.Name(), err)
			}
			n = min(max(k, 0), 16)
		}
		s, err := r.encodeJSON(x, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		return starlark.String(s), nil
	}
	decode := func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var s string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &s); err != nil {
			return nil, err
		}
		v, err := r.decodeJSON(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		return v, nil
	}
	return &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
		"encode": starlark.NewBuiltin("json.encode", encode),
		"dumps":  starlark.NewBuiltin("json.dumps", encode),
		"decode": starlark.NewBuiltin("json.decode", decode),
		"loads":  starlark.NewBuiltin("json.loads", decode),
	}}
}
