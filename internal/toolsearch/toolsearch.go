// Package toolsearch finds tools by what they do: a query in words is
// ranked against every tool's name, title, description and parameters
// with BM25 (Robertson and Zaragoza, "The Probabilistic Relevance
// Framework: BM25 and Beyond", 2009), the fields weighted as in BM25F.
// It backs search_tools of `nerve mcp serve --discover` and the llm
// node's discovery mode (issue 19). It imports no package of nerve;
// internal/mcpserver and the node kinds may import it.
package toolsearch

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	wTool      = 3.0
	wNode      = 1.0
	wTitle     = 2.0
	wDesc      = 1.0
	wParamName = 1.5
	wParamDesc = 0.5
)

// Doc is one tool to index under the name a client uses for it.
type Doc struct {
	// Name is the tool's name as served (node.tool, or node__tool).
	Name string
	// Node is the node's id ("" when the name has no node part).
	Node string
	Tool *mcp.Tool
}

// Hit is one found tool and its score (higher is better).
type Hit struct {
	Doc
	Score float64
}

// Index ranks a fixed set of tools. It is immutable once built and safe
// for concurrent use.
type Index struct {
	docs  []Doc
	tf    []map[string]float64 // weighted term frequencies, per doc
	dl    []float64            // weighted length, per doc
	avgdl float64
	df    map[string]int
}

// New indexes docs.
func New(docs []Doc) *Index {
	ix := &Index{docs: docs, tf: make([]map[string]float64, len(docs)), dl: make([]float64, len(docs)), df: map[string]int{}}
	var total float64
	for i, d := range docs {
		tf := map[string]float64{}
		add := func(text string, w float64) {
			for _, t := range Tokens(text) {
				tf[t] += w
				ix.dl[i] += w
			}
		}
		tool := d.Tool
		toolName := ""
		if tool != nil {
			toolName = tool.Name
		}
		if d.Node != "" {
			add(d.Node, wNode)
		}
		add(toolName, wTool)
		if tool != nil {
			add(tool.Title, wTitle)
			if tool.Annotations != nil {
				add(tool.Annotations.Title, wTitle)
			}
			add(tool.Description, wDesc)
			for name, desc := range params(tool.InputSchema) {
				add(name, wParamName)
				add(desc, wParamDesc)
			}
		}
		for t := range tf {
			ix.df[t]++
		}
		ix.tf[i] = tf
		total += ix.dl[i]
	}
	if len(docs) > 0 {
		ix.avgdl = total / float64(len(docs))
	}
	return ix
}

// Len returns how many tools are indexed.
func (ix *Index) Len() int { return len(ix.docs) }

// Search returns at most k tools for query, best first; tools that share
// no word with the query are left out. Equal scores keep name order.
func (ix *Index) Search(query string, k int) []Hit {
	terms := Tokens(query)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	n := float64(len(ix.docs))
	var hits []Hit
	for i, tf := range ix.tf {
		var score float64
		for _, t := range terms {
			f := tf[t]
			if f == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			norm := 1 - b + b*ix.dl[i]/ix.avgdl
			score += idf * f * (k1 + 1) / (f + k1*norm)
		}
		if score > 0 {
			hits = append(hits, Hit{Doc: ix.docs[i], Score: score})
		}
	}
	slices.SortStableFunc(hits, func(x, y Hit) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// params returns the top-level parameters of an input schema: name →
// description.
func params(schema any) map[string]string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		} `json:"properties"`
	}
	var data []byte
	switch v := schema.(type) {
	case nil:
		return nil
	case map[string]any: // a schema decoded from JSON: no round trip
		props, _ := v["properties"].(map[string]any)
		out := make(map[string]string, len(props))
		for name, p := range props {
			m, _ := p.(map[string]any)
			title, _ := m["title"].(string)
			desc, _ := m["description"].(string)
			out[name] = strings.TrimSpace(title + " " + desc)
		}
		return out
	case json.RawMessage:
		data = v
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil
		}
	}
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	out := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		out[name] = strings.TrimSpace(p.Title + " " + p.Description)
	}
	return out
}

// Tokens splits text into lower-case, stemmed words: at anything that is
// not a letter or digit (snake_case, kebab-case, dotted.names, spaces)
// and at camelCase humps (readTextFile, HTTPServer), dropping stop words.
func Tokens(text string) []string {
	var out []string
	stop := stopWords()
	emit := func(w string) {
		w = strings.ToLower(w)
		if w == "" || stop[w] {
			return
		}
		out = append(out, stem(w))
	}
	rs := []rune(text)
	start := -1
	for i, r := range rs {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !alnum {
			if start >= 0 {
				emit(string(rs[start:i]))
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		// A hump: aB, or the B of ABc (HTTPServer → HTTP Server).
		prev := rs[i-1]
		hump := unicode.IsLower(prev) && unicode.IsUpper(r) ||
			unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if hump {
			emit(string(rs[start:i]))
			start = i
		}
	}
	if start >= 0 {
		emit(string(rs[start:]))
	}
	return out
}

// stopWords are words that say nothing about what a tool does, made on
// first use rather than at every start of nerve (STYLE.md, practice 16).
var stopWords = sync.OnceValue(func() map[string]bool {
	stop := map[string]bool{}
	for w := range strings.FieldsSeq(`a an the and or of to in on for with from by as at is are be
		been this that these those it its into can will you your i me my we our do does how what
		which who should would could please there some any has have if then than so also`) {
		stop[w] = true
	}
	return stop
})

// stem removes the common English endings so that "files", "file",
// "reading", "read", "created" and "create" meet: plurals, -ing, -ed,
// a doubled last consonant left behind, and a final e. Query and tools
// go through the same function, so a stem need not be a word.
func stem(w string) string {
	if !isWord(w) {
		return w
	}
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	cut := false
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w, cut = w[:len(w)-3], true
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w, cut = w[:len(w)-2], true
	}
	if n := len(w); cut && n > 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		w = w[:n-1]
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// isWord reports whether w is lower-case ASCII letters only (stems are
// for English words; "base64" and "héllo" stay as they are).
func isWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
