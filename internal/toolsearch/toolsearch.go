// Package toolsearch finds tools by what they do: a query in words is
// ranked against every tool's name, title, description and parameters,
// and its server's name and instructions, with BM25 (Robertson and
// Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
// 2009), the fields weighted as in BM25F. Words are stemmed (Snowball),
// a word the tools do not use also matches its WordNet synonyms and
// derived forms (thesaurus.go) and, misspelt, the nearest word they use;
// a query that names a server prefers its tools, and one that asks
// prefers the tools that only read (intent.go); tools the session called
// for similar words rank higher (usage.go); an OpenAI-compatible
// embeddings endpoint, if configured, is fused in (embed.go). It backs
// search_tools of `nerve mcp serve --discover`, the llm node's discovery
// mode, `nerve tools --search` and the Commander's `@?` (issues 19 and
// 28). It imports no package of nerve but internal/suggest; pkg/session
// keeps one Index per catalogue.
package toolsearch

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/suggest"
)

// BM25 parameters: the usual ones (Manning et al., Introduction to
// Information Retrieval, §11.4.3).
const (
	k1 = 1.2
	b  = 0.75
)

// Field weights: a word of a tool's name says more than one of its
// description. A name is node.tool; the node part counts less than the
// tool part (twenty copies of one server share every word of the tool
// part, and a person names what a tool does more often than where).
const (
	wTool       = 3.0
	wNode       = 1.0
	wServer     = 1.0 // the server's name and title, as the node's id
	wTitle      = 2.0
	wDesc       = 1.0
	wParamName  = 1.5
	wParamDesc  = 0.5
	wInstructed = 0.3 // a server-level match in its instructions
)

// config is which means of ranking an Index uses; the evaluation
// measures each (eval_test.go).
type config struct {
	params      bool    // index parameters' names and descriptions
	server      bool    // index the server's name and title
	instruction float64 // weight of the server's instructions, 0: none
	synonym     float64 // weight of a thesaurus synonym's match, 0: none
	derived     float64 // weight of a derived form's match, 0: none
	rare        float64 // weight of a rarer sense's synonym, 0: none
	software    float64 // weight of a computing synonym's match, 0: none
	fuzzy       float64 // weight of a near spelling's match, 0: none
	typos       bool    // a dictionary word is never taken for a misspelling
	abbrev      float64 // weight of an abbreviation's match, 0: none
	compounds   bool    // "box plot" meets boxplot, "filename" meets file name
	either      bool    // a tool scores "box plot" or boxplot, the better, not both
	split       float64 // weight of each part of a word split in two, 0: 1
	named       float64 // a tool whose server the query names scores (1+named)×
	asks        float64 // a question raises read-only tools (1+asks)×, lowers the others
	does        float64 // a query that opens with a verb of change, the other way round
}

// defaults are the means measured to help (docs/performance.md).
var defaults = config{params: true, server: true, instruction: wInstructed,
	synonym: 0.4, derived: 0.4, rare: 0.2, software: 0.4, fuzzy: 0.5, typos: true, abbrev: 0.8,
	compounds: true, either: true, split: 0.5, named: 0.5, asks: 0.3, does: 0.2}

// weigh returns how much a match of a word a word list relates counts.
func (c config) weigh(kind byte, l *lexicon) float64 {
	switch {
	case l == software:
		return c.software
	case kind == '+':
		return c.derived
	case kind == '~':
		return c.rare
	}
	return c.synonym
}

// Doc is one tool to index under the name a client uses for it.
type Doc struct {
	// Name is the tool's name as served (node.tool, or node__tool).
	Name string
	// Node is the node's id ("" when the name has no node part).
	Node string
	Tool *mcp.Tool
	// Server is what the node's server says of itself, if known; the
	// docs of one node share it.
	Server *Server
}

// Server is what an MCP server says of itself in initialize.
type Server struct {
	Name, Title, Instructions string
}

// Hit is one found tool and its score (higher is better).
type Hit struct {
	Doc
	Score float64
}

// posting is one document of a term's list and the term's weighted
// frequency in it.
type posting struct {
	doc int32
	tf  float32
}

// Index ranks a fixed set of tools. It is immutable once built and safe
// for concurrent use.
type Index struct {
	docs  []Doc
	cfg   config
	vocab map[string]int32 // term → id
	terms []string         // id → term
	post  [][]posting      // id → the docs that have it
	// surface holds a term's words as the tools write them (lower-case),
	// for numeronyms.
	surface [][]string
	norm    []float32 // per doc: k1·(1 − b + b·dl/avgdl)
	// The servers' instructions, as documents of their own: a match
	// counts for every tool of the server.
	srvOf    []int32 // doc → server, -1 for none
	nsrv     int
	srvVocab map[string][]posting
	srvNorm  []float32
	surfaces map[string][]string // while building: term → surface
	// group is each doc's server (its node, else its Server), -1 for
	// none; names are the terms that name a server: term → groups.
	group []int32
	names map[int32][]int32
	emb   *embedded // nil: no embeddings endpoint
	read  []float32 // per doc: how sure it is that the tool only reads
	// verbRead is, per word of the annotated tools' names, the share of
	// those tools that only read.
	verbRead map[string]float32
}

// New indexes docs.
func New(docs []Doc) *Index { return newIndex(docs, defaults) }

func newIndex(docs []Doc, cfg config) *Index {
	ix := &Index{docs: docs, cfg: cfg, vocab: map[string]int32{}, norm: make([]float32, len(docs)), srvOf: make([]int32, len(docs))}
	dl := make([]float64, len(docs))
	var total float64
	tf := map[string]float64{}
	servers := map[*Server]int32{}
	stems := map[string]string{} // the tools of a catalogue share most words
	var srvText []string
	groups := map[string]int32{}
	ident := map[string]bool{} // this doc's identity terms
	var idents []map[string]bool
	var gident []string
	for i, d := range docs {
		clear(tf)
		clear(ident)
		naming := true // the node's and server's names come first
		add := func(text string, w float64) {
			words(text, func(word string) {
				t, ok := stems[word]
				if !ok {
					t = stemmer(word)
					stems[word] = t
				}
				tf[t] += w
				dl[i] += w
				if naming {
					ident[t] = true
				}
				if ix.cfg.abbrev > 0 {
					ix.seen(t, word)
				}
			})
		}
		if d.Node != "" {
			add(d.Node, wNode)
		}
		ix.srvOf[i] = -1
		if s := d.Server; s != nil {
			if cfg.server {
				add(s.Name+" "+s.Title, wServer)
			}
			naming = false
			if cfg.instruction > 0 && s.Instructions != "" {
				n, ok := servers[s]
				if !ok {
					n = int32(len(srvText))
					servers[s] = n
					srvText = append(srvText, s.Instructions)
				}
				ix.srvOf[i] = n
			}
		}
		naming = false
		if tool := d.Tool; tool != nil {
			add(tool.Name, wTool)
			add(tool.Title, wTitle)
			if tool.Annotations != nil {
				add(tool.Annotations.Title, wTitle)
			}
			add(tool.Description, wDesc)
			if cfg.params {
				for name, desc := range params(tool.InputSchema) {
					add(name, wParamName)
					add(desc, wParamDesc)
				}
			}
		}
		if cfg.named > 0 {
			key := d.Node
			if key == "" && d.Server != nil {
				key = "\x00" + d.Server.Name
			}
			g := int32(-1)
			if key != "" {
				var ok bool
				if g, ok = groups[key]; !ok {
					g = int32(len(groups))
					groups[key] = g
					idents = append(idents, maps.Clone(ident))
					srv := ""
					if d.Server != nil {
						srv = d.Server.Name
					}
					gident = append(gident, srv)
				}
			}
			ix.group = append(ix.group, g)
		}
		for t, f := range tf {
			id, ok := ix.vocab[t]
			if !ok {
				id = int32(len(ix.terms))
				ix.vocab[t] = id
				ix.terms = append(ix.terms, t)
				ix.post = append(ix.post, nil)
			}
			ix.post[id] = append(ix.post[id], posting{doc: int32(i), tf: float32(f)})
		}
		total += dl[i]
	}
	if len(docs) > 0 {
		avg := total / float64(len(docs))
		for i := range docs {
			ix.norm[i] = float32(k1 * (1 - b + b*dl[i]/avg))
		}
	}
	if ix.surfaces != nil {
		ix.surface = make([][]string, len(ix.terms))
		for id, t := range ix.terms {
			ix.surface[id] = ix.surfaces[t]
		}
		ix.surfaces = nil
	}
	if cfg.asks > 0 || cfg.does > 0 {
		ix.readOnly()
	}
	if cfg.named > 0 {
		ix.nameServers(idents, gident)
	}
	ix.nsrv = len(srvText)
	if ix.nsrv > 0 {
		ix.srvVocab = map[string][]posting{}
		ix.srvNorm = make([]float32, ix.nsrv)
		sdl := make([]float64, ix.nsrv)
		var stotal float64
		for n, text := range srvText {
			clear(tf)
			for _, t := range Tokens(text) {
				tf[t]++
				sdl[n]++
			}
			for t, f := range tf {
				ix.srvVocab[t] = append(ix.srvVocab[t], posting{doc: int32(n), tf: float32(f)})
			}
			stotal += sdl[n]
		}
		avg := stotal / float64(ix.nsrv)
		for n := range ix.srvNorm {
			ix.srvNorm[n] = float32(k1 * (1 - b + b*sdl[n]/avg))
		}
	}
	return ix
}

// nameServers finds the terms that name a server: words of a node's id
// or its server's name and title that at most two servers have there
// ("search" names brave-search and exa-search-server, and is no name),
// and that two thirds of the tools that use them anywhere belong to
// those servers ("notion", "kubernetes", "supabase"; not "api", which
// many tools use).
func (ix *Index) nameServers(idents []map[string]bool, server []string) {
	byTerm := map[string][]int32{}
	for g, id := range idents {
		for t := range id {
			byTerm[t] = append(byTerm[t], int32(g))
		}
	}
	ix.names = map[int32][]int32{}
	for t, gs := range byTerm {
		srvs := map[string]bool{} // replicas of one server are one
		for _, g := range gs {
			if server[g] == "" {
				srvs["\x00"+strconv.Itoa(int(g))] = true
			} else {
				srvs[server[g]] = true
			}
		}
		distinct := len(srvs)
		if distinct > 2 {
			continue
		}
		id, ok := ix.vocab[t]
		if !ok {
			continue
		}
		in := 0
		for _, p := range ix.post[id] {
			if slices.Contains(gs, ix.group[p.doc]) {
				in++
			}
		}
		if 3*in >= 2*len(ix.post[id]) {
			ix.names[id] = gs
		}
	}
}

// seen notes word as a surface form of term t.
func (ix *Index) seen(t, word string) {
	if ix.surfaces == nil {
		ix.surfaces = map[string][]string{}
	}
	if ws := ix.surfaces[t]; len(ws) < 4 && !slices.Contains(ws, word) {
		ix.surfaces[t] = append(ws, word)
	}
}

// has reports whether the index has term t.
func (ix *Index) has(t string) bool {
	_, ok := ix.vocab[t]
	return ok
}

// Len returns how many tools are indexed.
func (ix *Index) Len() int { return len(ix.docs) }

// idf is BM25's inverse document frequency of a term in df of n docs.
func idf(n, df int) float32 {
	return float32(math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5)))
}

// match is one way a query word meets the index: a term of the index and
// how much a match of it counts.
type match struct {
	term int32
	w    float32
}

// matches returns the terms of the index that query word q stands for:
// itself, else its synonyms and derived forms, else its nearest
// spelling.
func (ix *Index) matches(qw qword) []match {
	q := qw.stem
	var ms []match
	if id, ok := ix.vocab[q]; ok {
		ms = append(ms, match{id, 1})
	}
	if ix.cfg.synonym > 0 || ix.cfg.derived > 0 || ix.cfg.rare > 0 || ix.cfg.software > 0 {
		related(q, func(w string, kind byte, l *lexicon) {
			id, ok := ix.vocab[w]
			if !ok {
				return
			}
			if wt := ix.cfg.weigh(kind, l); wt > 0 {
				ms = append(ms, match{id, float32(wt)})
			}
		})
	}
	if qw.split {
		return ms
	}
	if len(ms) == 0 && ix.cfg.abbrev > 0 {
		if id, ok := ix.abbreviated(q); ok {
			ms = append(ms, match{id, float32(ix.cfg.abbrev)})
		}
	}
	if len(ms) == 0 && ix.cfg.fuzzy > 0 && isWord(q) && len(q) >= 4 && (!ix.cfg.typos || wordnet.entry(q) == "") {
		if w := suggest.Closest(q, ix.terms); w != "" && isWord(w) {
			ms = append(ms, match{ix.vocab[w], float32(ix.cfg.fuzzy)})
		}
	}
	return ms
}

// abbreviated returns the term of the index that q abbreviates: the
// commonest that starts with it ("repo" for repository, "config" for
// configuration), or a numeronym's ("k8s" for kubernetes: its first and
// last letters, and the count of those between).
func (ix *Index) abbreviated(q string) (int32, bool) {
	best, bestDF := int32(-1), 0
	consider := func(id int32) {
		if df := len(ix.post[id]); df > bestDF || df == bestDF && ix.terms[id] < ix.terms[best] {
			best, bestDF = id, df
		}
	}
	if n := len(q); n >= 3 && isDigits(q[1:n-1]) && isWord(q[:1]) && isWord(q[n-1:]) {
		between, _ := strconv.Atoi(q[1 : n-1])
		for id := range ix.terms {
			for _, w := range ix.surface[id] {
				if len(w) == between+2 && w[0] == q[0] && w[len(w)-1] == q[n-1] {
					consider(int32(id))
				}
			}
		}
	} else if isWord(q) && len(q) >= 3 {
		for id, t := range ix.terms {
			if len(t) > len(q) && strings.HasPrefix(t, q) {
				consider(int32(id))
			}
		}
	}
	return best, best >= 0
}

// lexical scores every doc for the query words: per word, the best of
// its matches (so a tool that has a word and its synonym does not count
// it twice), summed over the words.
func (ix *Index) lexical(words []qword) []float32 {
	n := len(ix.docs)
	scores := make([]float32, n)
	best := make([]float32, n)
	var touched []int32
	var sbest []float32
	// part holds, for the words a compound is made of, what each added
	// to each doc.
	var part map[int][]float32
	for _, q := range words {
		if q.of != [2]int8{} {
			if part == nil {
				part = map[int][]float32{}
			}
			for _, i := range q.of {
				part[int(i)] = nil
			}
		}
	}
	for qi, q := range words {
		touched = touched[:0]
		for _, m := range ix.matches(q) {
			ps := ix.post[m.term]
			f := idf(n, len(ps)) * m.w
			for _, p := range ps {
				s := f * p.tf * (k1 + 1) / (p.tf + ix.norm[p.doc])
				if best[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				best[p.doc] = max(best[p.doc], s)
			}
		}
		qw := q.weight()
		if _, ok := part[qi]; ok {
			c := make([]float32, n)
			for _, d := range touched {
				c[d] = best[d] * qw
			}
			part[qi] = c
		}
		for _, d := range touched {
			add := best[d] * qw
			if q.of != [2]int8{} {
				add -= part[int(q.of[0])][d] + part[int(q.of[1])][d]
			}
			if add > 0 {
				scores[d] += add
			}
			best[d] = 0
		}
		if ix.nsrv > 0 {
			if ps := ix.srvVocab[q.stem]; len(ps) > 0 {
				if sbest == nil {
					sbest = make([]float32, ix.nsrv)
				}
				f := idf(ix.nsrv, len(ps)) * float32(ix.cfg.instruction)
				for _, p := range ps {
					sbest[p.doc] += f * p.tf * (k1 + 1) / (p.tf + ix.srvNorm[p.doc])
				}
			}
		}
	}
	if ix.cfg.named > 0 {
		var named []int32
		for _, q := range words {
			if id, ok := ix.vocab[q.stem]; ok {
				named = append(named, ix.names[id]...)
			}
		}
		if len(named) > 0 {
			f := float32(1 + ix.cfg.named)
			for i, g := range ix.group {
				if g >= 0 && slices.Contains(named, g) {
					scores[i] *= f
				}
			}
		}
	}
	if sbest != nil {
		for i, s := range ix.srvOf {
			if s >= 0 && scores[i] > 0 {
				scores[i] += sbest[s]
			}
		}
	}
	return scores
}

// qword is a word of a query: its stem and as written (lower-case),
// and how much it counts (0: 1).
type qword struct {
	stem, surface string
	w             float32
	// split is set on a word that expand split into two the index
	// knows: it is not also taken for a misspelling.
	split bool
	// of, for two words written as one ("box plot" → boxplot), are
	// the indexes of the two: a tool counts the compound or its two
	// words, whichever scores more, not both. 0, 0: not a compound.
	of [2]int8
}

// weight is how much q counts.
func (q qword) weight() float32 {
	if q.w == 0 {
		return 1
	}
	return q.w
}

// queryWords returns the distinct words of a query.
func queryWords(query string) []qword {
	var out []qword
	words(query, func(w string) {
		s := stemmer(w)
		for _, q := range out {
			if q.stem == s {
				return
			}
		}
		out = append(out, qword{stem: s, surface: w})
	})
	return out
}

// expand adds to a query's words the compounds the index knows: two
// words written as one ("box plot" → boxplot), and one word that the
// index knows only as two ("filename" → file, name).
func (ix *Index) expand(ws []qword) []qword {
	if !ix.cfg.compounds {
		return ws
	}
	out := ws
	for i := 0; i+1 < len(ws); i++ {
		a, b := ws[i].surface, ws[i+1].surface
		if !isWord(a) || !isWord(b) {
			continue
		}
		if s := stemmer(a + b); ix.has(s) {
			c := qword{stem: s, surface: a + b}
			if ix.cfg.either && i+1 < 128 {
				c.of = [2]int8{int8(i), int8(i + 1)}
			}
			out = append(out, c)
		}
	}
	for i, w := range ws {
		if ix.has(w.stem) || !isWord(w.surface) {
			continue
		}
		for cut := 3; cut <= len(w.surface)-3; cut++ {
			a, b := stemmer(w.surface[:cut]), stemmer(w.surface[cut:])
			if ix.has(a) && ix.has(b) {
				sw := float32(ix.cfg.split)
				if sw == 0 {
					sw = 1
				}
				part := w.weight() * sw
				out = append(out, qword{stem: a, surface: w.surface[:cut], w: part}, qword{stem: b, surface: w.surface[cut:], w: part})
				if sw < 1 {
					out[i].split = true
				}
				break
			}
		}
	}
	return out
}

// top returns the k best docs with a score above zero that allow
// accepts (nil: all).
func (ix *Index) top(scores []float32, k int, allow func(*Doc) bool) []Hit {
	type scored struct {
		doc   int32
		score float32
	}
	var found []scored
	for i, s := range scores {
		if s > 0 && (allow == nil || allow(&ix.docs[i])) {
			found = append(found, scored{int32(i), s})
		}
	}
	slices.SortFunc(found, func(x, y scored) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		return strings.Compare(ix.docs[x.doc].Name, ix.docs[y.doc].Name)
	})
	if k > 0 && len(found) > k {
		found = found[:k]
	}
	hits := make([]Hit, len(found))
	for i, f := range found {
		hits[i] = Hit{Doc: ix.docs[f.doc], Score: float64(f.score)}
	}
	return hits
}
