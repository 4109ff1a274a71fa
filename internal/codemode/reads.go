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

// Uses are a global's uses in a script: its reads with a string key
// written out (name["key"], name.get("key")), and its first use in any
// other way (name[k], for k in name, f(name)), whose keys no one can tell
// before the script runs.
type Uses struct {
	Reads []Read
	Other *Read
}

// Reads parses src and returns the uses of each of the globals names (a
// graph knows from them which steps a script step waits for, and which
// inputs it reads). A syntax error is an *Error at its line and column.
func Reads(src string, names ...string) (map[string]*Uses, error) {
	f, err := fileOptions.Parse("script", src, 0)
	if err != nil {
		r := &run{file: "script"}
		return nil, r.syntaxError(err)
	}
	out := make(map[string]*Uses, len(names))
	for _, n := range names {
		out[n] = &Uses{}
	}
	keyed := map[*syntax.Ident]bool{}
	key := func(x, k syntax.Expr) {
		id, ok := x.(*syntax.Ident)
		lit, isLit := k.(*syntax.Literal)
		if !ok || out[id.Name] == nil || !isLit || lit.Token != syntax.STRING {
			return
		}
		s, _ := lit.Value.(string)
		keyed[id] = true
		u := out[id.Name]
		u.Reads = append(u.Reads, Read{Key: s, Line: int(lit.TokenPos.Line), Column: int(lit.TokenPos.Col)})
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
			if u := out[n.Name]; u != nil && !keyed[n] && u.Other == nil {
				u.Other = &Read{Line: int(n.NamePos.Line), Column: int(n.NamePos.Col)}
			}
		}
		return true
	})
	return out, nil
}
