package codemode

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/nerve-dev/nerve/pkg/node"
)

// What a value costs against Limits.Bytes, beside its strings' bytes:
// what go.starlark.net allocates for it (measured with
// runtime.MemStats, rounded up).
const (
	slotBytes   = 16  // a value in a list, a tuple or an argument list
	headerBytes = 24  // a list or a tuple itself
	tableBytes  = 512 // a dict or a set itself: its first table
	entryBytes  = 112 // an entry of a dict or a set, its share of the table
	pairBytes   = 64  // a two-element tuple made per element (items(), enumerate())
	funcBytes   = 64  // a function a lambda makes
)

// maxDepth bounds how deeply the values a script shows, passes or
// returns may nest: printing, formatting and converting recurse.
const maxDepth = 1000

// maxIntDigits bounds int() of a string: big-number parsing is quadratic
// (Python has the same limit, for the same reason).
const maxIntDigits = 4300

// charge counts n more bytes built, or fails naming the bytes limit when
// that would pass it; what says what was being built.
func (r *run) charge(n int64, what string) error {
	if n <= 0 {
		return nil
	}
	if n > r.limits.Bytes-r.used {
		e := r.limitError(LimitBytes, fmt.Sprintf("%s would bring the values built to %s, more than the limit bytes=%s: every value built counts, dropped ones too: build strings with join rather than + in a loop, or ask tools for less",
			what, node.HumanBytes(satAdd(r.used, n)), node.HumanBytes(r.limits.Bytes)))
		r.stopWith(e)
		return e
	}
	r.used += n
	return nil
}

// walk counts n elements a builtin goes through as n steps, or fails
// naming the steps limit when that would pass it.
func (r *run) walk(n int, what string) error {
	if n <= 0 {
		return nil
	}
	r.thread.Steps += uint64(n)
	if r.thread.Steps >= r.limits.Steps {
		e := r.limitError(LimitSteps, fmt.Sprintf("%s goes through %d elements, past the limit steps=%d", what, n, r.limits.Steps))
		r.stopWith(e)
		return e
	}
	return nil
}

func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// bound returns how many elements iterating x yields, charged as steps:
// its length, or — for the string iterables that have none — a count.
func (r *run) bound(x starlark.Value, what string) (int, error) {
	if n := starlark.Len(x); n >= 0 {
		return n, r.walk(n, what)
	}
	it, ok := x.(starlark.Iterable)
	if !ok {
		return 0, nil // not iterable: the builtin says so
	}
	iter := it.Iterate()
	defer iter.Done()
	n := 0
	var v starlark.Value
	for iter.Next(&v) {
		n++
		if n%1024 == 0 {
			if err := r.walk(1024, what); err != nil {
				return 0, err
			}
		}
	}
	return n, r.walk(n%1024, what)
}

// shallow is the bytes a copy of x's top level takes: a string's bytes,
// a list's or tuple's slots, a dict's or set's entries.
func shallow(x starlark.Value) int64 {
	switch x := x.(type) {
	case starlark.String:
		return int64(len(x))
	case starlark.Bytes:
		return int64(len(x))
	case *starlark.List:
		return headerBytes + slotBytes*int64(x.Len())
	case starlark.Tuple:
		return headerBytes + slotBytes*int64(len(x))
	case *starlark.Dict:
		return tableBytes + entryBytes*int64(x.Len())
	case *starlark.Set:
		return tableBytes + entryBytes*int64(x.Len())
	case starlark.Int:
		return int64(intBits(x) / 8)
	case *starlark.Function:
		return funcBytes
	}
	return 0
}

func intBits(i starlark.Int) int {
	if v, ok := i.Int64(); ok {
		if v < 0 {
			v = -v
		}
		return bits.Len64(uint64(v))
	}
	return i.BigInt().BitLen()
}

// guards returns the rewrite's guards (rewrite.go), predeclared under
// names no script can write.
func (r *run) guards() starlark.StringDict {
	d := starlark.StringDict{
		guardAttr:    starlark.NewBuiltin("getattr", r.attrGuard),
		guardAugItem: starlark.NewBuiltin("augmented assignment", r.augItemGuard),
		guardAugAttr: starlark.NewBuiltin("augmented assignment", r.augAttrGuard),
		guardSliced:  starlark.NewBuiltin("slice", r.slicedGuard),
		guardSpread:  starlark.NewBuiltin("call", r.spreadGuard),
		guardNew:     starlark.NewBuiltin("new", r.newGuard),
		"$+=": starlark.NewBuiltin("+=", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return r.inPlace(syntax.PLUS, args)
		}),
		"$|=": starlark.NewBuiltin("|=", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return r.inPlace(syntax.PIPE, args)
		}),
	}
	for op, name := range binaryGuards {
		d[name] = starlark.NewBuiltin(op.String(), func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if len(args) != 2 {
				return nil, fmt.Errorf("%s needs two operands", op)
			}
			return r.binary(op, args[0], args[1])
		})
	}
	return d
}

// binary is x op y, charged before it is built.
func (r *run) binary(op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	if err := r.checkBinary(op, x, y); err != nil {
		return nil, err
	}
	return starlark.Binary(op, x, y)
}

func (r *run) checkBinary(op syntax.Token, x, y starlark.Value) error {
	xi, xint := x.(starlark.Int)
	yi, yint := y.(starlark.Int)
	if xint && yint {
		switch op {
		case syntax.STAR:
			return r.charge(int64(intBits(xi)+intBits(yi))/8, "an int product")
		case syntax.LTLT:
			if n, ok := yi.Int64(); ok && n > 0 && n < 1<<20 {
				return r.charge((int64(intBits(xi))+n)/8, "an int shift")
			}
		}
		return nil
	}
	switch op {
	case syntax.PLUS, syntax.PIPE, syntax.AMP, syntax.CIRCUMFLEX, syntax.MINUS:
		return r.charge(shallow(x)+shallow(y), fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()))
	case syntax.STAR:
		seq, n := x, yi
		if xint {
			seq, n = y, xi
		} else if !yint {
			return nil
		}
		count, ok := n.Int64()
		if !ok {
			count = math.MaxInt64
		}
		each := shallow(seq)
		var head int64
		switch seq.(type) {
		case *starlark.List, starlark.Tuple:
			head = headerBytes // one header, the elements count times
			each -= head
		}
		return r.charge(satAdd(head, satMul(each, count)), fmt.Sprintf("%s * %s", seq.Type(), n))
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			return r.chargeFormat(string(f), strings.Count(string(f), "%"), y, "%")
		}
	}
	return nil
}

// chargeFormat charges a formatting of format with fields fields taking
// their values from args (a tuple, a mapping or one value).
func (r *run) chargeFormat(format string, fields int, args starlark.Value, what string) error {
	var vals []starlark.Value
	switch a := args.(type) {
	case starlark.Tuple:
		vals = a
	case *starlark.Dict:
		for _, kv := range a.Items() {
			vals = append(vals, kv[1])
		}
	default:
		vals = []starlark.Value{a}
	}
	return r.chargeFields(format, fields, vals, what)
}

func (r *run) chargeFields(format string, fields int, vals []starlark.Value, what string) error {
	var widest int64
	for _, v := range vals {
		n, err := r.textSize(v, true)
		if err != nil {
			return err
		}
		widest = max(widest, n)
	}
	return r.charge(satAdd(int64(len(format)), satMul(int64(fields), widest)), what+" formatting")
}

// inPlace is x += y (x |= y): a list (a dict) grows in place, as in
// Starlark; any other x is bound to x op y.
func (r *run) inPlace(op syntax.Token, args starlark.Tuple) (starlark.Value, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("%s= needs two operands", op)
	}
	x, y := args[0], args[1]
	switch xv := x.(type) {
	case *starlark.List:
		if op != syntax.PLUS {
			break
		}
		if _, ok := y.(starlark.Iterable); !ok {
			break
		}
		n, err := r.bound(y, "+=")
		if err != nil {
			return nil, err
		}
		if err := r.charge(slotBytes*int64(n), "list += "+y.Type()); err != nil {
			return nil, err
		}
		// Collected first: x += x must not append to what it iterates.
		elems := make([]starlark.Value, 0, n)
		iter := starlark.Iterate(y)
		var v starlark.Value
		for iter.Next(&v) {
			elems = append(elems, v)
		}
		iter.Done()
		for _, v := range elems {
			if err := xv.Append(v); err != nil {
				return nil, err
			}
		}
		return xv, nil
	case *starlark.Dict:
		yd, ok := y.(*starlark.Dict)
		if op != syntax.PIPE || !ok {
			break
		}
		if err := r.charge(entryBytes*int64(yd.Len()), "dict |= dict"); err != nil {
			return nil, err
		}
		for _, kv := range yd.Items() {
			if err := xv.SetKey(kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
		return xv, nil
	}
	return r.binary(op, x, y)
}

// augItemGuard is x[i] op= y: x and i are evaluated once.
func (r *run) augItemGuard(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, i, y, op := args[0], args[1], args[2], augToken(args[3])
	var old starlark.Value
	switch c := x.(type) {
	case starlark.HasSetKey:
		v, found, err := c.Get(i)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("key %s not in %s", shortRepr(i), x.Type())
		}
		old = v
	case starlark.HasSetIndex:
		n, err := index(i, c.Len())
		if err != nil {
			return nil, err
		}
		old = c.Index(n)
	default:
		return nil, fmt.Errorf("%s value does not support item assignment", x.Type())
	}
	v, err := r.inPlace(op, starlark.Tuple{old, y})
	if err != nil {
		return nil, err
	}
	switch c := x.(type) {
	case starlark.HasSetKey:
		return starlark.None, c.SetKey(i, v)
	case starlark.HasSetIndex:
		n, err := index(i, c.Len())
		if err != nil {
			return nil, err
		}
		return starlark.None, c.SetIndex(n, v)
	}
	return starlark.None, nil
}

// index is i as an index into a sequence of n elements (negative from
// the end).
func index(i starlark.Value, n int) (int, error) {
	k, err := starlark.AsInt32(i)
	if err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	if k < 0 {
		k += n
	}
	if k < 0 || k >= n {
		return 0, fmt.Errorf("index %s out of range [%d:%d]", i, -n, n)
	}
	return k, nil
}

// augAttrGuard is x.f op= y.
func (r *run) augAttrGuard(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, name, y, op := args[0], string(args[1].(starlark.String)), args[2], augToken(args[3])
	old, err := getAttr(x, name)
	if err != nil {
		return nil, err
	}
	v, err := r.inPlace(op, starlark.Tuple{old, y})
	if err != nil {
		return nil, err
	}
	s, ok := x.(starlark.HasSetField)
	if !ok {
		return nil, fmt.Errorf("cannot assign to field %q of %s", name, x.Type())
	}
	return starlark.None, s.SetField(name, v)
}

func augToken(v starlark.Value) syntax.Token {
	n, _ := starlark.AsInt32(v)
	return syntax.Token(n)
}

func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	h, ok := x.(starlark.HasAttrs)
	if ok {
		v, err := h.Attr(name)
		if err != nil || v != nil {
			return v, err
		}
	}
	return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
}

// slicedGuard charges the copy a slice of a list, a tuple or a string
// made (a slice is never larger than what it was cut from).
func (r *run) slicedGuard(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return args[0], r.charge(shallow(args[0]), "a slice")
}

// newGuard charges a list, tuple, dict or set a literal or a
// comprehension built, or a function a lambda made: the values a script
// builds one step at a time count too, so a loop that makes dicts stops
// at the limit, not when the daemon runs out of memory.
func (r *run) newGuard(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return args[0], r.charge(shallow(args[0]), "a new "+args[0].Type())
}

// spreadGuard charges the argument tuple or dict that f(*x) or f(**x)
// copies x into.
func (r *run) spreadGuard(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x := args[0]
	if _, ok := x.(*starlark.Dict); ok {
		return x, r.charge(shallow(x), "**kwargs")
	}
	n, err := r.bound(x, "*args")
	if err != nil {
		return nil, err
	}
	return x, r.charge(slotBytes*int64(n), "*args")
}

// attrGuard is x.name for a name in copyMethods: a method of a string,
// list, dict or set is wrapped so that it is charged before it builds.
func (r *run) attrGuard(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, name := args[0], string(args[1].(starlark.String))
	return r.attr(x, name)
}

func (r *run) attr(x starlark.Value, name string) (starlark.Value, error) {
	v, err := getAttr(x, name)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*starlark.Builtin)
	if !ok || m.Receiver() == nil || !copyMethods[name] {
		return v, nil
	}
	check := r.methodCheck(x, name)
	if check == nil {
		return v, nil
	}
	return starlark.NewBuiltin(m.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := check(args, kwargs); err != nil {
			return nil, err
		}
		return m.CallInternal(thread, args, kwargs)
	}), nil
}

// methodCheck returns the charge of a method that copies or grows, nil
// for one that does neither.
func (r *run) methodCheck(x starlark.Value, name string) func(args starlark.Tuple, kwargs []starlark.Tuple) error {
	what := x.Type() + "." + name + "()"
	switch x := x.(type) {
	case starlark.String:
		s := string(x)
		switch name {
		case "join":
			return func(args starlark.Tuple, _ []starlark.Tuple) error {
				if len(args) != 1 {
					return nil
				}
				return r.chargeJoin(s, args[0], what)
			}
		case "replace":
			return func(args starlark.Tuple, _ []starlark.Tuple) error {
				if len(args) < 2 {
					return nil
				}
				old, ok1 := args[0].(starlark.String)
				repl, ok2 := args[1].(starlark.String)
				if !ok1 || !ok2 {
					return nil
				}
				n := int64(strings.Count(s, string(old)))
				if len(args) == 3 {
					if c, err := starlark.AsInt32(args[2]); err == nil && c >= 0 {
						n = min(n, int64(c))
					}
				}
				return r.charge(int64(len(s))+satMul(n, int64(len(repl))), what)
			}
		case "format":
			return func(args starlark.Tuple, kwargs []starlark.Tuple) error {
				vals := append([]starlark.Value(nil), args...)
				for _, kv := range kwargs {
					vals = append(vals, kv[1])
				}
				return r.chargeFields(s, strings.Count(s, "{"), vals, what)
			}
		case "split", "rsplit", "splitlines":
			return func(args starlark.Tuple, kwargs []starlark.Tuple) error {
				return r.charge(satMul(pieces(s, name, args, kwargs), slotBytes+16), what)
			}
		case "lower", "upper", "title", "capitalize":
			return func(starlark.Tuple, []starlark.Tuple) error {
				return r.charge(3*int64(len(s)), what) // a case change may grow a rune
			}
		}
	case *starlark.List:
		if name == "extend" {
			return func(args starlark.Tuple, _ []starlark.Tuple) error {
				if len(args) != 1 {
					return nil
				}
				n, err := r.bound(args[0], what)
				if err != nil {
					return err
				}
				return r.charge(slotBytes*int64(n), what)
			}
		}
	case *starlark.Dict:
		switch name {
		case "update":
			return func(args starlark.Tuple, kwargs []starlark.Tuple) error {
				n := len(kwargs)
				for _, a := range args {
					k, err := r.bound(a, what)
					if err != nil {
						return err
					}
					n += k
				}
				return r.charge(entryBytes*int64(n), what)
			}
		case "items":
			return func(starlark.Tuple, []starlark.Tuple) error {
				return r.charge((slotBytes+pairBytes)*int64(x.Len()), what)
			}
		case "keys", "values":
			return func(starlark.Tuple, []starlark.Tuple) error {
				return r.charge(slotBytes*int64(x.Len()), what)
			}
		}
	case *starlark.Set:
		switch name {
		case "union", "intersection", "difference", "symmetric_difference", "update":
			return func(args starlark.Tuple, _ []starlark.Tuple) error {
				n := x.Len()
				for _, a := range args {
					k, err := r.bound(a, what)
					if err != nil {
						return err
					}
					n += k
				}
				return r.charge(entryBytes*int64(n), what)
			}
		}
	}
	return nil
}

// chargeJoin charges sep.join(iterable): its strings' bytes and the
// separators between them.
func (r *run) chargeJoin(sep string, it starlark.Value, what string) error {
	n, err := r.bound(it, what)
	if err != nil {
		return err
	}
	total := satMul(int64(max(n-1, 0)), int64(len(sep)))
	iter := starlark.Iterate(it)
	if iter == nil {
		return nil
	}
	defer iter.Done()
	var v starlark.Value
	for iter.Next(&v) {
		s, ok := v.(starlark.String)
		if !ok {
			break // join says what is wrong
		}
		total = satAdd(total, int64(len(s)))
	}
	return r.charge(total, what)
}

// pieces is at most how many strings s.split/rsplit/splitlines returns.
func pieces(s, name string, args starlark.Tuple, kwargs []starlark.Tuple) int64 {
	if name == "splitlines" {
		return int64(strings.Count(s, "\n") + strings.Count(s, "\r") + 1)
	}
	var sep starlark.Value = starlark.None
	maxsplit := -1
	if len(args) > 0 {
		sep = args[0]
	}
	if len(args) > 1 {
		maxsplit, _ = starlark.AsInt32(args[1])
	}
	for _, kv := range kwargs {
		switch kv[0].(starlark.String) {
		case "sep":
			sep = kv[1]
		case "maxsplit":
			maxsplit, _ = starlark.AsInt32(kv[1])
		}
	}
	var n int
	if str, ok := sep.(starlark.String); ok && str != "" {
		n = strings.Count(s, string(str)) + 1
	} else {
		n = fields(s) + 1
	}
	if maxsplit >= 0 {
		n = min(n, maxsplit+1)
	}
	return int64(n)
}

// fields counts the runs of non-space in s.
func fields(s string) int {
	n, in := 0, false
	for _, c := range s {
		sp := unicode.IsSpace(c)
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// textSize is at least len(str(v)) (repr(v) when quoted), found without
// building it; its walk is charged as steps. A value nested deeper than
// maxDepth is refused: Starlark's own printing would recurse without
// bound.
func (r *run) textSize(v starlark.Value, quoted bool) (int64, error) {
	w := sizer{limit: r.limits.Bytes - r.used + 1}
	n := w.size(v, quoted, 0)
	if err := r.walk(w.visited, "showing a value"); err != nil {
		return 0, err
	}
	if w.deep {
		return 0, fmt.Errorf("a value nested more than %d levels deep cannot be shown", maxDepth)
	}
	return n, nil
}

type sizer struct {
	limit   int64
	total   int64
	visited int
	deep    bool
	path    []starlark.Value
}

func (w *sizer) size(v starlark.Value, quoted bool, depth int) int64 {
	w.visited++
	if depth > maxDepth {
		w.deep = true
		return 0
	}
	var n int64
	switch v := v.(type) {
	case starlark.String:
		if !quoted {
			return int64(len(v))
		}
		return quotedLen(string(v))
	case starlark.Bytes:
		return 1 + quotedLen(string(v))
	case starlark.Int:
		return int64(intBits(v))*3/10 + 2
	case starlark.Float:
		return 32
	case starlark.Bool, starlark.NoneType:
		return 5
	case *starlark.List, *starlark.Dict, *starlark.Set:
		for _, p := range w.path {
			if p == v {
				return 5 // [...], as Starlark shows a cycle
			}
		}
		w.path = append(w.path, v)
		defer func() { w.path = w.path[:len(w.path)-1] }()
		n = 8
		if d, ok := v.(*starlark.Dict); ok {
			for _, kv := range d.Items() {
				n += w.size(kv[0], true, depth+1) + w.size(kv[1], true, depth+1) + 4
				if w.total+n > w.limit || w.deep {
					break
				}
			}
			return n
		}
		iter := starlark.Iterate(v)
		var e starlark.Value
		for iter.Next(&e) {
			n += w.size(e, true, depth+1) + 2
			if w.total+n > w.limit || w.deep {
				break
			}
		}
		iter.Done()
		return n
	case starlark.Tuple:
		n = 3
		for _, e := range v {
			n += w.size(e, true, depth+1) + 2
			if w.total+n > w.limit || w.deep {
				break
			}
		}
		return n
	}
	return int64(len(v.String()))
}

// quotedLen is at least the length of s as a Starlark string literal: a
// byte that is escaped takes at most four.
func quotedLen(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			n += 2
		case c >= 0x20 && c < utf8.RuneSelf:
			n++
		default:
			n += 4
		}
	}
	return n
}

// shortRepr is v as an error message shows it: a string quoted and cut
// to 100 bytes, anything else by its type.
func shortRepr(v starlark.Value) string {
	if str, ok := v.(starlark.String); ok {
		if len(str) > 100 {
			return str[:100].String() + "…"
		}
		return str.String()
	}
	return v.Type()
}
