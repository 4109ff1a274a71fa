package node

import (
	"path"
	"strings"
)

// MatchTool reports whether glob p chooses node id's tool: p is a glob
// over node.tool (path.Match syntax: * ? [a-z]), and a glob without a dot
// is over node ids ("fs" is "fs.*"). Tool "" asks about the node as a
// whole: a dotless glob, or one whose tool part is "*". The session's
// expose filter and its call policy read globs so.
func MatchTool(p, id, tool string) bool {
	np, tp, dotted := strings.Cut(p, ".")
	if ok, _ := path.Match(np, id); !ok {
		return false
	}
	if !dotted {
		return true
	}
	if tool == "" {
		return tp == "*"
	}
	ok, _ := path.Match(tp, tool)
	return ok
}
