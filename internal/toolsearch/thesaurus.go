package toolsearch

import (
	_ "embed"
	"sort"
	"strings"
	"sync"
)

// The two word lists, derived by testdata/thesaurus (its README says
// how): a line per word stem, sorted, then its synonyms' stems, then its
// derived forms' stems each after a +, then its rarer senses' synonyms'
// stems each after a ~; comment lines start with #.
var (
	// wordnet is WordNet 3.0's synonyms of a word's two most frequent
	// senses, its derived forms, and the synonyms of its rarer senses
	// that GloVe's vectors put near it (licence: thesaurus-LICENSE).
	//
	//go:embed thesaurus.txt
	wordnetText string
	wordnet     = &lexicon{text: wordnetText}

	// software is FOLDOC's headwords that share an entry: the
	// vocabulary of computing ("directory", "folder") WordNet lacks
	// (licence: software-LICENSE).
	//
	//go:embed software.txt
	softwareText string
	software     = &lexicon{text: softwareText}
)

// lexicon is one word list, read where it is embedded: its lines are
// found by binary search, so it costs the heap only their offsets.
type lexicon struct {
	text  string
	once  sync.Once
	lines []int32 // the offset of each entry, in order
}

func (l *lexicon) index() []int32 {
	l.once.Do(func() {
		for off := 0; off < len(l.text); {
			end := strings.IndexByte(l.text[off:], '\n')
			if end < 0 {
				end = len(l.text) - off
			}
			if l.text[off] != '#' {
				l.lines = append(l.lines, int32(off))
			}
			off += end + 1
		}
	})
	return l.lines
}

// entry returns the line whose head is w, without its head, or "".
func (l *lexicon) entry(w string) string {
	ls := l.index()
	line := func(i int) string {
		s := l.text[ls[i]:]
		if j := strings.IndexByte(s, '\n'); j >= 0 {
			s = s[:j]
		}
		return s
	}
	i := sort.Search(len(ls), func(i int) bool {
		head, _, _ := strings.Cut(line(i), " ")
		return head >= w
	})
	if i == len(ls) {
		return ""
	}
	head, rest, _ := strings.Cut(line(i), " ")
	if head != w {
		return ""
	}
	return rest
}

// related calls f with each word that a word list relates to stem w,
// its kind ('s' synonym, '+' derived form, '~' a rarer sense's
// synonym) and which list.
func related(w string, f func(r string, kind byte, l *lexicon)) {
	for _, l := range []*lexicon{wordnet, software} {
		for r := range strings.FieldsSeq(l.entry(w)) {
			switch r[0] {
			case '+', '~':
				f(r[1:], r[0], l)
			default:
				f(r, 's', l)
			}
		}
	}
}
