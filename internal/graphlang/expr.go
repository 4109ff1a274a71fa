package graphlang

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Expr is a `when:` condition: comparisons (== != < > <= >=), && || !,
// parentheses, literals (true, false, null, numbers, 'strings' or
// "strings") and ${...} references. Nothing else: no calls, no eval.
type Expr struct {
	src  string
	root exprNode
	refs []*Ref
}

type exprNode interface {
	eval(sc *Scope) (any, error)
}

type (
	litNode struct{ v any }
	refNode struct{ r *Ref }
	notNode struct{ x exprNode }
	binNode struct {
		op   string
		l, r exprNode
	}
)

func (n litNode) eval(*Scope) (any, error)    { return n.v, nil }
func (n refNode) eval(sc *Scope) (any, error) { return sc.resolve(n.r) }
func (n notNode) eval(sc *Scope) (any, error) {
	v, err := n.x.eval(sc)
	return !truthy(v), err
}

func (n binNode) eval(sc *Scope) (any, error) {
	l, err := n.l.eval(sc)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "&&":
		if !truthy(l) {
			return false, nil
		}
		r, err := n.r.eval(sc)
		return truthy(r), err
	case "||":
		if truthy(l) {
			return true, nil
		}
		r, err := n.r.eval(sc)
		return truthy(r), err
	}
	r, err := n.r.eval(sc)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "==":
		return equal(l, r), nil
	case "!=":
		return !equal(l, r), nil
	}
	c, err := compare(l, r, n.op)
	return c, err
}

// equal compares JSON values; a number compares equal to a string that
// reads as the same number (text results are strings).
func equal(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	fa, oka := number(a)
	fb, okb := number(b)
	return oka && okb && fa == fb
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	return 0, false
}

func compare(a, b any, op string) (bool, error) {
	var c int
	fa, oka := number(a)
	fb, okb := number(b)
	sa, sas := a.(string)
	sb, sbs := b.(string)
	switch {
	case oka && okb:
		switch {
		case fa < fb:
			c = -1
		case fa > fb:
			c = 1
		}
	case sas && sbs:
		c = strings.Compare(sa, sb)
	default:
		return false, fmt.Errorf("cannot compare %s %s %s", TypeName(a), op, TypeName(b))
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// truthy: false, null, "", 0, "false" and empty lists and objects are
// false; everything else is true.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != "" && v != "false"
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// Eval returns whether the condition holds in sc.
func (e *Expr) Eval(sc *Scope) (bool, error) {
	v, err := e.root.eval(sc)
	if err != nil {
		return false, fmt.Errorf("when %q: %w", clipText(e.src), err)
	}
	return truthy(v), nil
}

// Limits of a `when:` condition. The parser recurses once per '(' and '!',
// and a graph nesting millions of them overflowed the daemon's stack
// (issue 21); a condition a person writes is a line or two.
const (
	MaxConditionLen   = 4096 // bytes
	MaxConditionDepth = 64   // nested '(' and '!'
)

// ParseExpr parses a `when:` condition.
func ParseExpr(src string) (*Expr, error) {
	if len(src) > MaxConditionLen {
		return nil, fmt.Errorf("the condition is %d bytes, over the limit of %d: compute the value in a step and test its result", len(src), MaxConditionLen)
	}
	p := &exprParser{src: src}
	if err := p.lex(); err != nil {
		return nil, err
	}
	if len(p.toks) == 0 {
		return nil, fmt.Errorf("empty condition")
	}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at column %d", clipText(p.toks[p.i].text), p.toks[p.i].col)
	}
	return &Expr{src: src, root: root, refs: p.refs}, nil
}

type token struct {
	kind string // "op", "lit", "ref", "(", ")"
	text string
	v    any
	ref  *Ref
	col  int
}

type exprParser struct {
	src   string
	toks  []token
	i     int
	refs  []*Ref
	depth int // of '(' and '!' being parsed
}

// nest enters one level of '(' or '!' at t.
func (p *exprParser) nest(t token) error {
	p.depth++
	if p.depth > MaxConditionDepth {
		return fmt.Errorf("%q at column %d nests more than %d deep (the limit of '(' and '!' inside each other): simplify the condition", clipText(t.text), t.col, MaxConditionDepth)
	}
	return nil
}

func (p *exprParser) lex() error {
	s := p.src
	for i := 0; i < len(s); {
		c := s[i]
		col := i + 1
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case strings.HasPrefix(s[i:], "${"):
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return fmt.Errorf("${ without a closing } at column %d", col)
			}
			r, err := parseRef(s[i+2 : i+j])
			if err != nil {
				return err
			}
			p.refs = append(p.refs, r)
			p.toks = append(p.toks, token{kind: "ref", text: s[i : i+j+1], ref: r, col: col})
			i += j + 1
		case c == '(' || c == ')':
			p.toks = append(p.toks, token{kind: string(c), text: string(c), col: col})
			i++
		case strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "!=") || strings.HasPrefix(s[i:], "<=") ||
			strings.HasPrefix(s[i:], ">=") || strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			p.toks = append(p.toks, token{kind: "op", text: s[i : i+2], col: col})
			i += 2
		case c == '<' || c == '>' || c == '!':
			p.toks = append(p.toks, token{kind: "op", text: string(c), col: col})
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return fmt.Errorf("string at column %d has no closing %c", col, c)
			}
			p.toks = append(p.toks, token{kind: "lit", text: s[i : i+j+2], v: s[i+1 : i+1+j], col: col})
			i += j + 2
		default:
			j := i
			for j < len(s) && (s[j] == '.' || s[j] == '-' || s[j] == '+' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_') {
				j++
			}
			word := s[i:j]
			var v any
			switch word {
			case "true":
				v = true
			case "false":
				v = false
			case "null":
				v = nil
			case "":
				return fmt.Errorf("unexpected %q at column %d", string(c), col)
			default:
				f, err := strconv.ParseFloat(word, 64)
				if err != nil {
					return fmt.Errorf("%q at column %d is not a literal: use true, false, null, a number, 'a string' or ${a.reference}", clipText(word), col)
				}
				v = f
			}
			p.toks = append(p.toks, token{kind: "lit", text: word, v: v, col: col})
			i = j
		}
	}
	return nil
}

func (p *exprParser) peekOp(ops ...string) string {
	if p.i < len(p.toks) && p.toks[p.i].kind == "op" {
		for _, o := range ops {
			if p.toks[p.i].text == o {
				return o
			}
		}
	}
	return ""
}

func (p *exprParser) or() (exprNode, error) {
	l, err := p.and()
	for err == nil && p.peekOp("||") != "" {
		p.i++
		var r exprNode
		if r, err = p.and(); err == nil {
			l = binNode{"||", l, r}
		}
	}
	return l, err
}

func (p *exprParser) and() (exprNode, error) {
	l, err := p.unary()
	for err == nil && p.peekOp("&&") != "" {
		p.i++
		var r exprNode
		if r, err = p.unary(); err == nil {
			l = binNode{"&&", l, r}
		}
	}
	return l, err
}

func (p *exprParser) unary() (exprNode, error) {
	if p.peekOp("!") != "" {
		if err := p.nest(p.toks[p.i]); err != nil {
			return nil, err
		}
		p.i++
		x, err := p.unary()
		p.depth--
		return notNode{x}, err
	}
	return p.cmp()
}

func (p *exprParser) cmp() (exprNode, error) {
	l, err := p.primary()
	if err != nil {
		return nil, err
	}
	if op := p.peekOp("==", "!=", "<", ">", "<=", ">="); op != "" {
		p.i++
		r, err := p.primary()
		if err != nil {
			return nil, err
		}
		return binNode{op, l, r}, nil
	}
	return l, nil
}

func (p *exprParser) primary() (exprNode, error) {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("the condition ends too soon: a value is missing")
	}
	t := p.toks[p.i]
	p.i++
	switch t.kind {
	case "lit":
		return litNode{t.v}, nil
	case "ref":
		return refNode{t.ref}, nil
	case "(":
		if err := p.nest(t); err != nil {
			return nil, err
		}
		x, err := p.or()
		p.depth--
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.toks) || p.toks[p.i].kind != ")" {
			return nil, fmt.Errorf("'(' at column %d has no ')'", t.col)
		}
		p.i++
		return x, nil
	}
	return nil, fmt.Errorf("unexpected %q at column %d: a value is expected", clipText(t.text), t.col)
}
