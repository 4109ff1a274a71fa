package codemode

import (
	"fmt"
	"strconv"

	"go.starlark.net/syntax"
)

// Starlark bounds a program's steps but not what one step builds: "x" *
// 1000000000 or list(range(1000000000)) is one step, and a builtin never
// looks at the thread's cancellation (google/starlark-go#606). So before a
// script is compiled its syntax tree — parsed by go.starlark.net's own
// parser — is rewritten so that every operation that may build a large
// value in one step calls a guard of ours (guard.go) that charges the
// value's size to Limits.Bytes and its elements to Limits.Steps before
// building it. The guards are predeclared under names that start with
// '$', which no identifier can contain: a script can neither call nor
// shadow them.

// lastName is the global the value of a script's last line goes to when
// that line is an expression (the script's result without `result`).
const lastName = "$last"

// Guard names.
const (
	guardAttr    = "$attr"    // $attr(x, "name"): x.name for a method that copies or grows
	guardAugItem = "$augitem" // $augitem(x, i, y, op): x[i] op= y
	guardAugAttr = "$augattr" // $augattr(x, "f", y, op): x.f op= y
	guardSliced  = "$sliced"  // $sliced(x[a:b]): charges the copy a slice made
	guardSpread  = "$spread"  // f(*$spread(x)), f(**$spread(x)): charges the copy
	guardNew     = "$new"     // $new([...]), $new({...}), $new(lambda: …): charges what a literal built
)

// binaryGuards are the operators that may copy or grow their operands;
// the others (comparisons, /, //, >>, in, and, or) never build more than
// they were given.
var binaryGuards = map[syntax.Token]string{
	syntax.PLUS:       "$+",
	syntax.MINUS:      "$-",
	syntax.STAR:       "$*",
	syntax.PERCENT:    "$%",
	syntax.PIPE:       "$|",
	syntax.AMP:        "$&",
	syntax.CIRCUMFLEX: "$^",
	syntax.LTLT:       "$<<",
}

// augOps maps an augmented assignment to its operator.
var augOps = map[syntax.Token]syntax.Token{
	syntax.PLUS_EQ:       syntax.PLUS,
	syntax.MINUS_EQ:      syntax.MINUS,
	syntax.STAR_EQ:       syntax.STAR,
	syntax.PERCENT_EQ:    syntax.PERCENT,
	syntax.PIPE_EQ:       syntax.PIPE,
	syntax.AMP_EQ:        syntax.AMP,
	syntax.CIRCUMFLEX_EQ: syntax.CIRCUMFLEX,
	syntax.LTLT_EQ:       syntax.LTLT,
}

// inPlaceGuards are x op= y on a name where Starlark mutates x in place
// (a list's +=, a dict's |=) rather than binding x to x op y.
var inPlaceGuards = map[syntax.Token]string{
	syntax.PLUS: "$+=",
	syntax.PIPE: "$|=",
}

// copyMethods are the methods that build a value larger than their
// receiver, or copy it: x.name goes through $attr for these names only.
var copyMethods = map[string]bool{
	// string
	"join": true, "replace": true, "format": true, "split": true, "rsplit": true,
	"splitlines": true, "lower": true, "upper": true, "title": true, "capitalize": true,
	"elems": true, "elem_ords": true, "codepoints": true, "codepoint_ords": true,
	// list, dict, set
	"extend": true, "update": true, "items": true, "keys": true, "values": true,
	"union": true, "intersection": true, "difference": true, "symmetric_difference": true,
}

// guardError is a construct scripts may not use, at its position.
type guardError struct {
	pos syntax.Position
	msg string
}

func (e *guardError) Error() string { return e.msg }

// guardFile refuses load statements and rewrites f's operations to go
// through the guards; a last line that is an expression is assigned to
// lastName.
func guardFile(f *syntax.File) error {
	var g rewriter
	f.Stmts = g.stmts(f.Stmts)
	if g.err != nil {
		return g.err
	}
	if n := len(f.Stmts); n > 0 {
		if es, ok := f.Stmts[n-1].(*syntax.ExprStmt); ok {
			start, _ := es.X.Span()
			f.Stmts[n-1] = &syntax.AssignStmt{OpPos: start, Op: syntax.EQ, LHS: ident(lastName, start), RHS: es.X}
		}
	}
	return nil
}

type rewriter struct{ err error }

func ident(name string, pos syntax.Position) *syntax.Ident {
	return &syntax.Ident{NamePos: pos, Name: name}
}

func call(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: ident(name, pos), Lparen: pos, Args: args, Rparen: pos}
}

func stringLit(s string, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: strconv.Quote(s), Value: s}
}

func intLit(n int, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.INT, TokenPos: pos, Raw: strconv.Itoa(n), Value: int64(n)}
}

func (g *rewriter) stmts(list []syntax.Stmt) []syntax.Stmt {
	for i, s := range list {
		list[i] = g.stmt(s)
	}
	return list
}

func (g *rewriter) stmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		return g.assign(s)
	case *syntax.DefStmt:
		g.params(s.Params)
		s.Body = g.stmts(s.Body)
	case *syntax.ExprStmt:
		s.X = g.expr(s.X)
	case *syntax.IfStmt:
		s.Cond = g.expr(s.Cond)
		s.True = g.stmts(s.True)
		s.False = g.stmts(s.False)
	case *syntax.ForStmt:
		s.Vars = g.target(s.Vars)
		s.X = g.expr(s.X)
		s.Body = g.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = g.expr(s.Cond)
		s.Body = g.stmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = g.expr(s.Result)
		}
	case *syntax.LoadStmt:
		if g.err == nil {
			g.err = &guardError{pos: s.Load, msg: fmt.Sprintf("load(%q) is not available in scripts: there are no modules to load — every visible tool is already a function (fs.read_text_file(path=...)), and json is built in", s.Module.Value)}
		}
	}
	return s
}

// assign rewrites x op= y through the guards; x = y only inside.
func (g *rewriter) assign(s *syntax.AssignStmt) syntax.Stmt {
	s.RHS = g.expr(s.RHS)
	op, aug := augOps[s.Op]
	if !aug {
		s.LHS = g.target(s.LHS)
		return s
	}
	switch lhs := s.LHS.(type) {
	case *syntax.Ident:
		name := binaryGuards[op]
		if ip, ok := inPlaceGuards[op]; ok {
			name = ip
		}
		// x op= y is x = guard(x, y): evaluating a name twice is harmless.
		return &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: lhs,
			RHS: call(name, s.OpPos, ident(lhs.Name, lhs.NamePos), s.RHS)}
	case *syntax.IndexExpr:
		return &syntax.ExprStmt{X: call(guardAugItem, s.OpPos, g.expr(lhs.X), g.expr(lhs.Y), s.RHS, intLit(int(op), s.OpPos))}
	case *syntax.DotExpr:
		return &syntax.ExprStmt{X: call(guardAugAttr, s.OpPos, g.expr(lhs.X), stringLit(lhs.Name.Name, lhs.NamePos), s.RHS, intLit(int(op), s.OpPos))}
	}
	s.LHS = g.target(s.LHS)
	return s
}

// target rewrites what an assignment target evaluates (a[i] = v: a, i)
// without touching what it binds.
func (g *rewriter) target(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X, e.Y = g.expr(e.X), g.expr(e.Y)
	case *syntax.DotExpr:
		e.X = g.expr(e.X)
	case *syntax.ParenExpr:
		e.X = g.target(e.X)
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = g.target(e.List[i])
		}
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = g.target(e.List[i])
		}
	}
	return e
}

// params rewrites the default values of a def's or lambda's parameters.
func (g *rewriter) params(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = g.expr(b.Y)
		}
	}
}

func (g *rewriter) exprs(list []syntax.Expr) {
	for i := range list {
		list[i] = g.expr(list[i])
	}
}

func (g *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = g.expr(e.X), g.expr(e.Y)
		if name, ok := binaryGuards[e.Op]; ok {
			return call(name, e.OpPos, e.X, e.Y)
		}
	case *syntax.CallExpr:
		e.Fn = g.expr(e.Fn)
		for i, a := range e.Args {
			switch a := a.(type) {
			case *syntax.BinaryExpr: // name=value
				if a.Op == syntax.EQ {
					a.Y = g.expr(a.Y)
					continue
				}
			case *syntax.UnaryExpr: // *args, **kwargs copy what they spread
				if a.X != nil && (a.Op == syntax.STAR || a.Op == syntax.STARSTAR) {
					a.X = call(guardSpread, a.OpPos, g.expr(a.X))
					continue
				}
			}
			e.Args[i] = g.expr(a)
		}
	case *syntax.DotExpr:
		e.X = g.expr(e.X)
		if copyMethods[e.Name.Name] {
			return call(guardAttr, e.Dot, e.X, stringLit(e.Name.Name, e.NamePos))
		}
	case *syntax.SliceExpr:
		e.X = g.expr(e.X)
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = g.expr(*p)
			}
		}
		return call(guardSliced, e.Lbrack, e)
	case *syntax.IndexExpr:
		e.X, e.Y = g.expr(e.X), g.expr(e.Y)
	case *syntax.ParenExpr:
		e.X = g.expr(e.X)
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = g.expr(e.X)
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = g.expr(e.Cond), g.expr(e.True), g.expr(e.False)
	case *syntax.ListExpr:
		g.exprs(e.List)
		return call(guardNew, e.Lbrack, e)
	case *syntax.TupleExpr:
		g.exprs(e.List)
		start, _ := e.Span()
		return call(guardNew, start, e)
	case *syntax.DictExpr:
		for _, en := range e.List {
			if d, ok := en.(*syntax.DictEntry); ok {
				d.Key, d.Value = g.expr(d.Key), g.expr(d.Value)
			}
		}
		return call(guardNew, e.Lbrace, e)
	case *syntax.LambdaExpr:
		g.params(e.Params)
		e.Body = g.expr(e.Body)
		return call(guardNew, e.Lambda, e)
	case *syntax.Comprehension:
		e.Body = g.expr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = g.target(c.Vars)
				c.X = g.expr(c.X)
			case *syntax.IfClause:
				c.Cond = g.expr(c.Cond)
			}
		}
		return call(guardNew, e.Lbrack, e)
	case *syntax.DictEntry:
		e.Key, e.Value = g.expr(e.Key), g.expr(e.Value)
	}
	return e
}
