package commander

import "github.com/nerve-dev/nerve/internal/suggest"

// DidYouMean returns the candidate closest to name, or "" when none is close
// enough to be worth suggesting: suggest.Closest, the rule all of nerve
// uses (a swap of two neighbours is one edit, case is ignored, a prefix
// either way counts).
func DidYouMean(name string, candidates []string) string {
	return suggest.Closest(name, candidates)
}
