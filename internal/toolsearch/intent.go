package toolsearch

import (
	"slices"
	"strings"
)

// readOnly estimates, per doc, whether its tool only reads: 1 when its
// server says so (the MCP annotation readOnlyHint), 0 when it says not;
// for a tool without the annotation, the share of read-only tools among
// the annotated ones of the catalogue that use its name's words ("get",
// "list" and "search" in read-only tools' names, "create" and "delete"
// in the others'), or 0.5 when its words tell nothing.
func (ix *Index) readOnly() {
	ix.read = make([]float32, len(ix.docs))
	type votes struct{ ro, rw float32 }
	byWord := map[string]*votes{}
	// A word most tools of a node have in their names (Playwright's
	// "browser", Notion's "API") says which server, not what the tool
	// does: it does not vote.
	type key struct{ node, word string }
	perNode := map[string]int{}
	shared := map[key]int{}
	tokens := map[string][]string{} // replicas of a server share names
	named := func(d *Doc) []string {
		ws, ok := tokens[d.Tool.Name]
		if !ok {
			ws = uniq(Tokens(d.Tool.Name))
			tokens[d.Tool.Name] = ws
		}
		return ws
	}
	for i := range ix.docs {
		d := &ix.docs[i]
		if d.Tool == nil {
			continue
		}
		perNode[d.Node]++
		for _, w := range named(d) {
			shared[key{d.Node, w}]++
		}
	}
	nameWords := func(d *Doc) []string {
		if d.Tool == nil {
			return nil
		}
		var out []string
		for _, w := range named(d) {
			if n := perNode[d.Node]; n >= 3 && 3*shared[key{d.Node, w}] > 2*n {
				continue
			}
			out = append(out, w)
		}
		return out
	}
	hint := func(d *Doc) (bool, bool) {
		if d.Tool == nil || d.Tool.Annotations == nil {
			return false, false
		}
		return d.Tool.Annotations.ReadOnlyHint, true
	}
	for i := range ix.docs {
		d := &ix.docs[i]
		ro, ok := hint(d)
		if !ok {
			continue
		}
		for _, w := range nameWords(d) {
			v := byWord[w]
			if v == nil {
				v = &votes{}
				byWord[w] = v
			}
			if ro {
				v.ro++
			} else {
				v.rw++
			}
		}
	}
	ix.verbRead = map[string]float32{}
	for w, v := range byWord {
		if v.ro+v.rw >= 2 {
			ix.verbRead[w] = v.ro / (v.ro + v.rw)
		}
	}
	for i := range ix.docs {
		d := &ix.docs[i]
		if ro, ok := hint(d); ok {
			if ro {
				ix.read[i] = 1
			}
			continue
		}
		var sum, n float32
		for _, w := range nameWords(d) {
			if v := byWord[w]; v != nil && v.ro+v.rw >= 2 {
				sum += v.ro / (v.ro + v.rw)
				n++
			}
		}
		ix.read[i] = 0.5
		if n > 0 {
			ix.read[i] = sum / n
		}
	}
}

// asks reports whether a query asks for something to be told rather
// than done: it opens as a question ("what", "which", "is", "has", "how
// many") or with show or list.
func asks(query string) bool {
	fs := strings.Fields(strings.ToLower(query))
	if len(fs) == 0 {
		return false
	}
	first := strings.TrimRight(fs[0], "?,.!")
	if i := strings.IndexAny(first, "'’"); i >= 0 {
		first = first[:i]
	}
	switch first {
	case "what", "whats", "which", "who", "whose", "where", "wheres", "when", "why",
		"is", "are", "was", "were", "has", "have", "had", "does", "did", "do",
		"show", "list":
		return true
	case "how":
		if len(fs) > 1 {
			switch strings.TrimRight(fs[1], "?,.!") {
			case "many", "much", "long", "far", "big", "often", "old":
				return true
			}
		}
	}
	return false
}

// intend raises the scores of read-only tools for a query that asks
// (asks), and lowers the others', by cfg.asks; for a query whose first
// word is one the catalogue's annotated tools use in their names to
// change things ("add", "create", "delete"), the other way round, by
// cfg.does.
func (ix *Index) intend(query string, ws []qword, scores []float32) {
	if ix.read == nil {
		return
	}
	var e float32
	switch {
	case ix.cfg.asks > 0 && asks(query):
		e = float32(ix.cfg.asks)
	case ix.cfg.does > 0 && len(ws) > 0:
		if r, ok := ix.verbRead[ws[0].stem]; ok && r <= 0.3 {
			e = -float32(ix.cfg.does)
		}
	}
	if e == 0 {
		return
	}
	for i, r := range ix.read {
		scores[i] *= 1 + e*(2*r-1)
	}
}

// uniq returns ws without repeats, in order.
func uniq(ws []string) []string {
	var out []string
	for _, w := range ws {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
