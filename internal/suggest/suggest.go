// Package suggest finds the name a person most likely meant when the one
// they typed does not exist — the "did you mean" of every nerve message
// about an unknown node, tool, argument, command or config key. One rule
// for all of them, so the REPL, the command line, the session and the
// config reader suggest the same thing for the same typo.
//
// It is layer 0: it imports nothing of nerve's, and anything may import it.
package suggest

import "strings"

// Limit is how many edits Closest forgives in name: a third of its length
// in runes, counting at most 12, and at least one — so "fss" may mean "fs",
// but "ab" never means "xy".
func Limit(name string) int {
	return max(1, min(len([]rune(name)), 12)/3)
}

// Closest returns the candidate that name most likely stands for, or ""
// when none is close enough to be worth suggesting. The rule:
//   - case is ignored;
//   - a candidate within Limit(name) edits qualifies: optimal string
//     alignment distance in runes, the fewest insertions, deletions,
//     substitutions and swaps of two neighbours ("raed" → "read" is one
//     edit) that turn one into the other;
//   - so does, at Limit(name) edits, a candidate that starts with name
//     (a typed fragment of two runes or more: "list" → "list_directory")
//     or that name starts with (a word of three runes or more with a
//     suffix: "searchfiles" → "search");
//   - the nearest wins; among equally near ones, the one that sorts first.
func Closest(name string, candidates []string) string {
	if name == "" || len(candidates) == 0 {
		return ""
	}
	lname := strings.ToLower(name)
	best, bestD := "", 1<<30
	limit := Limit(name)
	var buf [3][]int
	for _, c := range candidates {
		if c == "" {
			continue
		}
		lc := strings.ToLower(c)
		d := osa(lname, lc, limit, &buf)
		if d > limit && (strings.HasPrefix(lc, lname) && len(lname) >= 2 || strings.HasPrefix(lname, lc) && len(lc) >= 3) {
			d = limit // a prefix either way: a typed fragment or a word with a suffix
		}
		if d <= limit && (d < bestD || d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// osa is the optimal string alignment distance between a and b (runes,
// case sensitive), or
// limit+1 as soon as it is known to exceed limit. buf holds the rows, so
// one search over many candidates allocates them once.
func osa(a, b string, limit int, buf *[3][]int) int {
	ra, rb := []rune(a), []rune(b)
	if abs(len(ra)-len(rb)) > limit {
		return limit + 1
	}
	n := len(rb) + 1
	for i := range buf {
		if cap(buf[i]) < n {
			buf[i] = make([]int, n)
		}
		buf[i] = buf[i][:n]
	}
	prev2, prev, cur := buf[0], buf[1], buf[2]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
