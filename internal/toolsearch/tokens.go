package toolsearch

import (
	"strings"
	"sync"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// Tokens splits text into lower-case, stemmed words: at anything that is
// not a letter or digit (snake_case, kebab-case, dotted.names, spaces)
// and at camelCase humps (readTextFile, HTTPServer), dropping stop words
// and single letters. Words are stemmed by the Snowball English stemmer
// (Porter2), so "files", "filing" and "file" meet.
func Tokens(text string) []string {
	var out []string
	words(text, func(w string) { out = append(out, stemmer(w)) })
	return out
}

// words calls f with each word of text, lower-case, stop words and
// single letters left out. A clitic after an apostrophe goes with it
// ("what's", "you've", "don't" are what, you, do), and a per cent sign
// is the word percent ("68%").
func words(text string, f func(w string)) {
	stop := stopWords()
	emit := func(w string) {
		w = strings.ToLower(w)
		if len(w) < 2 && !isDigits(w) || stop[w] {
			return
		}
		f(w)
	}
	rs := []rune(text)
	start := -1
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !alnum {
			if start >= 0 {
				w := string(rs[start:i])
				if isApostrophe(r) && i+1 < len(rs) && unicode.IsLetter(rs[i+1]) {
					j := i + 1
					for j < len(rs) && unicode.IsLetter(rs[j]) {
						j++
					}
					if base, ok := clitic(w, strings.ToLower(string(rs[i+1:j]))); ok {
						w = base
						i = j - 1
					}
				}
				emit(w)
				start = -1
			}
			if r == '%' {
				emit("percent")
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
}

func isApostrophe(r rune) bool { return r == '\'' || r == '\u2019' }

// clitic returns the word w'c stands for when c is an English clitic
// ("what's", "we're", "don't"): w, without the n of n't.
func clitic(w, c string) (string, bool) {
	switch c {
	case "s", "re", "ve", "ll", "d", "m":
		return w, true
	case "t":
		lw := strings.ToLower(w)
		switch {
		case lw == "can":
			return w, true
		case lw == "won":
			return "will", true
		case strings.HasSuffix(lw, "n"):
			return w[:len(w)-1], true
		}
	}
	return w, false
}

// stemmer stems one lower-case word; a variable so that the evaluation
// can measure the stemmer against none.
var stemmer = stem

// stem is the word's Snowball English stem; words that are not plain
// ASCII letters ("base64", "héllo") stay as they are.
func stem(w string) string {
	if !isWord(w) {
		return w
	}
	return english.Stem(w, true)
}

// stopWords are words that say nothing about what a tool does: function
// words, and the words of a question or a request ("how can I",
// "please"); made on first use rather than at every start of nerve
// (STYLE.md, practice 16).
var stopWords = sync.OnceValue(func() map[string]bool {
	stop := map[string]bool{}
	for w := range strings.FieldsSeq(`a an the and or of to in on for with from by as at is are be
		been this that these those it its into can will you your i me my we our do does how what
		which who should would could please there some any has have if then than so also
		want need let lets us via am was were where when whose whom`) {
		stop[w] = true
	}
	return stop
})

// isWord reports whether w is lower-case ASCII letters only.
func isWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return w != ""
}

func isDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}
