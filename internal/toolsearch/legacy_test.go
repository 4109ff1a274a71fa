package toolsearch

import "strings"

// legacyStem is the stemmer of issue 19, kept to measure Snowball against:
// plurals, -ing, -ed, a doubled last consonant left behind, a final e.
func legacyStem(w string) string {
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
