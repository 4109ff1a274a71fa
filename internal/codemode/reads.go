package codemode

import (
	"go.starlark.net/syntax"
)

// Read is a read of a global with a key written out: steps["read"] or
// steps.get("read").
type Read struct {
	Key          string
	Line, Column int
}

// Reads parses src and returns the reads of the global name with a
// string key written out (name["key"], name.get("key")), and the first
// use of name in any other way (name[k], for k in name, f(name)), which
// no one can tell the keys of before the script runs. A graph knows from
// them which steps a script step waits for. A syntax error is an *Error
// at its line and column.
func Reads(src, name string) (reads []Read, other *Read, err error) {
	f, err := fileOptions.Parse("script", src, 0)
	if err != nil {
		r := &run{file: "script"}
		return nil, nil, r.syntaxError(err)
	}
	keyed := map[*syntax.Ident]bool{}
	key := func(x, k syntax.Expr) {
		id, ok := x.(*syntax.Ident)
		lit, isLit := k.(*syntax.Literal)
		if !ok || id.Name != name || !isLit || lit.Token != syntax.STRING {
			return
		}
		s, _ := lit.Value.(string)
		keyed[id] = true
		reads = append(reads, Read{Key: s, Line: int(lit.TokenPos.Line), Column: int(lit.TokenPos.Col)})
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.IndexExpr:
			key(n.X, n.Y)
		case *syntax.CallExpr:
			if dot, ok := n.Fn.(*syntax.DotExpr); ok && dot.Name.Name == "get" && len(n.Args) > 0 {
				key(dot.X, n.Args[0])
			}
		case *syntax.Ident:
			if n.Name == name && !keyed[n] && other == nil {
				other = &Read{Line: int(n.NamePos.Line), Column: int(n.NamePos.Col)}
			}
		}
		return true
	})
	return reads, other, nil
}
