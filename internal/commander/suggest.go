package commander

import "strings"

// DidYouMean returns the candidate closest to name, or "" when none is close
// enough to be worth suggesting. Closeness is the optimal-string-alignment
// distance (a swap of two neighbours costs one), case-insensitive; a
// candidate that starts with name, or that name starts with, also counts.
func DidYouMean(name string, candidates []string) string {
	if name == "" || len(candidates) == 0 {
		return ""
	}
	lname := strings.ToLower(name)
	best, bestD := "", 1<<30
	limit := max(1, min(len([]rune(name)), 12)/3)
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

// osa is the optimal string alignment distance between a and b (runes), or
// limit+1 as soon as it is known to exceed limit.
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
