package mcpserver

import (
	"strings"
	"time"
)

// startWait bounds the short requests the server makes of its own
// accord (features at creation, resource-updated notices).
const startWait = 10 * time.Second

// templateMatches reports whether uri can be an expansion of the RFC 6570
// template t: its literal parts appear in order, each expression matching
// any text. It only routes a URI to the node that serves the template; the
// server behind the node decides for real.
func templateMatches(t, uri string) bool {
	var lits []string
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			lits = append(lits, rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return t == uri
		}
		lits = append(lits, rest[:i])
		rest = rest[i+j+1:]
	}
	if len(lits) == 1 {
		return t == uri
	}
	if !strings.HasPrefix(uri, lits[0]) {
		return false
	}
	uri = uri[len(lits[0]):]
	last := lits[len(lits)-1]
	for _, l := range lits[1 : len(lits)-1] {
		if l == "" {
			continue
		}
		i := strings.Index(uri, l)
		if i < 0 {
			return false
		}
		uri = uri[i+len(l):]
	}
	return strings.HasSuffix(uri, last)
}
