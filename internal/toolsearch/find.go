package toolsearch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// DefaultLimit is how many tools a search returns when not told.
const DefaultLimit = 5

// Options of one search. The zero value is a plain search.
type Options struct {
	// Limit is how many tools to return at most (0: DefaultLimit).
	Limit int
	// Allow, if set, keeps only the tools it accepts: a client's
	// exposure, the tools an llm node may use.
	Allow func(*Doc) bool
	// Usage, if set, ranks higher the tools the session called after
	// searching with similar words, and learns from this search.
	Usage *Usage
}

// Result is what Find found.
type Result struct {
	// Hits are the tools found, best first.
	Hits []Hit
	// Nearest is set when no tool matched the query's words: Hits are
	// then the nearest tools by spelling, or, with none near, the first
	// ones. A search never answers empty while there are tools.
	Nearest bool
	// Of is how many tools the search went through.
	Of int
	// Note says what the ranking could not use this time (an
	// embeddings endpoint that failed), for the log.
	Note string
}

// Find ranks the tools for query: BM25 over the words and what they may
// mean, usage, and the embeddings endpoint if the index has one, fused
// by reciprocal rank (embed.go).
func (ix *Index) Find(ctx context.Context, query string, o *Options) Result {
	if o == nil {
		o = &Options{}
	}
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	r := Result{Of: ix.count(o.Allow)}
	ws := ix.expand(queryWords(query))
	scores := ix.lexical(ws)
	ix.intend(query, ws, scores)
	if o.Usage != nil {
		o.Usage.boost(ix, ws, scores)
	}
	if ix.emb != nil {
		var err error
		if scores, err = ix.fuse(ctx, query, scores, o.Allow); err != nil {
			r.Note = err.Error()
		}
	}
	r.Hits = ix.top(scores, limit, o.Allow)
	if len(r.Hits) == 0 && r.Of > 0 {
		r.Nearest = true
		r.Hits = ix.top(ix.nearest(query), limit, o.Allow)
		if len(r.Hits) == 0 {
			r.Hits = ix.first(limit, o.Allow)
		}
	}
	if o.Usage != nil {
		o.Usage.searched(ws, r.Hits)
	}
	return r
}

// Describe is one line that says what r is, for a person or a model:
// how many tools were searched and, for Nearest, that no tool matched.
func (r Result) Describe(query string) string {
	if r.Nearest {
		return fmt.Sprintf("no tool matches %q; the nearest of %d tools by spelling — search again with other words for what it should do", query, r.Of)
	}
	return fmt.Sprintf("%d of %d tools match %q", len(r.Hits), r.Of, query)
}

// count returns how many docs allow accepts.
func (ix *Index) count(allow func(*Doc) bool) int {
	if allow == nil {
		return len(ix.docs)
	}
	n := 0
	for i := range ix.docs {
		if allow(&ix.docs[i]) {
			n++
		}
	}
	return n
}

// nearest scores every doc by the character trigrams its name and
// description share with the query (Dice coefficient): the tools nearest
// a query none of whose words the tools use (a misspelt name, a word
// glued to another).
func (ix *Index) nearest(query string) []float32 {
	q := trigrams(query)
	scores := make([]float32, len(ix.docs))
	if len(q) == 0 {
		return scores
	}
	for i, d := range ix.docs {
		text := d.Name
		if d.Tool != nil {
			text += " " + d.Tool.Title + " " + d.Tool.Description
		}
		t := trigrams(text)
		shared := 0
		for g := range q {
			if t[g] {
				shared++
			}
		}
		scores[i] = 2 * float32(shared) / float32(len(q)+len(t))
	}
	return scores
}

// trigrams returns the three-letter runs of each word of s, lower-case,
// the word's ends marked.
func trigrams(s string) map[string]bool {
	out := map[string]bool{}
	for w := range strings.FieldsFuncSeq(strings.ToLower(s), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		w = " " + w + " "
		for i := 0; i+3 <= len(w); i++ {
			out[w[i:i+3]] = true
		}
	}
	return out
}

// first returns the first limit docs allow accepts, in name order.
func (ix *Index) first(limit int, allow func(*Doc) bool) []Hit {
	var hits []Hit
	for i := range ix.docs {
		if allow == nil || allow(&ix.docs[i]) {
			hits = append(hits, Hit{Doc: ix.docs[i]})
		}
	}
	slices.SortFunc(hits, func(x, y Hit) int { return cmp.Compare(x.Name, y.Name) })
	return hits[:min(limit, len(hits))]
}
